/**
 * `npm run test:xstate-latest`: runs the engine's tests (test/engine, the runtime check's canary among them) on the
 * newest xstate 5 of the npm registry, installed into a temporary folder, and reports what differs from the xstate
 * Troupe installs: the runtime check's verdict and the tests that fail. A report, not a gate: no registry, no network
 * or no newer version end it with exit code 0. It fails (exit code 1) only when the runtime check would accept that
 * xstate while test/engine fails on it: Troupe would then run machines compiled on a runtime they differ on.
 *
 *     npm run test:xstate-latest                    # the newest xstate 5
 *     npm run test:xstate-latest -- --version 5.33.2  # another version
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx';

function report(line: string): void {
  console.log(`xstate-latest: ${line}`);
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env, timeoutMs = 90_000) {
  return spawnSync(command, args, { cwd: root, env, encoding: 'utf8', timeout: timeoutMs });
}

function requestedVersion(): string | undefined {
  const index = process.argv.indexOf('--version');
  if (index >= 0) return process.argv[index + 1];
  const viewed = run(npm, ['view', 'xstate@5', 'version', '--json'], process.env, 30_000);
  if (viewed.status !== 0) return undefined;
  try {
    const versions = JSON.parse(viewed.stdout) as string | string[];
    return Array.isArray(versions) ? versions.at(-1) : versions;
  } catch {
    return undefined;
  }
}

interface VitestReport {
  testResults: { name: string; assertionResults: { fullName: string; status: string }[] }[];
}

interface GateReport {
  interpreter: string;
  problems: string[];
  checkMicros?: number;
}

function main(): number {
  const started = Date.now();
  const installed = (
    JSON.parse(readFileSync(join(root, 'node_modules', 'xstate', 'package.json'), 'utf8')) as {
      version: string;
    }
  ).version;
  const version = requestedVersion();
  if (!version) {
    report('the npm registry could not be asked for the newest xstate 5 (no network?): nothing tested.');
    return 0;
  }
  report(
    `installed xstate ${installed}; testing xstate ${version}${version === installed ? ' (the same)' : ''}.`,
  );
  const folder = mkdtempSync(join(tmpdir(), 'troupe-xstate-latest-'));
  try {
    const install = run(npm, [
      'install',
      '--prefix',
      folder,
      '--no-audit',
      '--no-fund',
      '--no-save',
      '--ignore-scripts',
      `xstate@${version}`,
    ]);
    if (install.status !== 0) {
      report(`xstate ${version} could not be installed: nothing tested.\n${install.stderr.trim()}`);
      return 0;
    }
    const results = join(folder, 'results.json');
    const gate = join(folder, 'gate.json');
    const env = {
      ...process.env,
      TROUPE_XSTATE_DIR: join(folder, 'node_modules', 'xstate'),
      TROUPE_GATE_REPORT: gate,
      TROUPE_INTERPRETER: '',
    };
    const tests = run(
      npx,
      [
        'vitest',
        'run',
        '--config',
        'scripts/xstate-latest.vitest.config.ts',
        '--reporter=json',
        `--outputFile=${results}`,
      ],
      env,
      110_000,
    );
    let vitest: VitestReport;
    let verdict: GateReport;
    try {
      vitest = JSON.parse(readFileSync(results, 'utf8')) as VitestReport;
      verdict = JSON.parse(readFileSync(gate, 'utf8')) as GateReport;
    } catch {
      report(`the engine's tests did not run on xstate ${version}:\n${tests.stderr.slice(-2000)}`);
      return 0;
    }
    const failed = vitest.testResults.flatMap((file) =>
      file.assertionResults
        .filter((test) => test.status === 'failed')
        .map((test) => `${file.name.slice(root.length)} > ${test.fullName}`),
    );
    const accepted = verdict.interpreter === 'compiled';
    report(
      accepted
        ? `runtime check: accepted (the compiled interpreter would run), in ${verdict.checkMicros} µs.`
        : `runtime check: refused (machines would run on XState's interpreter): ${verdict.problems.join('; ')}`,
    );
    const total = vitest.testResults.reduce((sum, file) => sum + file.assertionResults.length, 0);
    report(`test/engine on xstate ${version}: ${total - failed.length} of ${total} tests pass.`);
    for (const name of failed) report(`  failed: ${name}`);
    report(`took ${Math.round((Date.now() - started) / 1000)} s.`);
    if (accepted && failed.length > 0) {
      report(
        `FAIL: the runtime check accepts xstate ${version}, but test/engine fails on it: the compiled interpreter ` +
          `would run where it differs. Make the canary or the member check catch the difference (src/engine/runtime-gate.ts).`,
      );
      return 1;
    }
    return 0;
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

process.exitCode = main();
