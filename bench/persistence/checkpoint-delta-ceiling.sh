#!/bin/sh
# The most a checkpoint written as what changed could save: a copy of this tree whose SQLite store writes, for each
# commit's session row, only the agent's checkpoint, `updatedAt` and the conversation's last two messages (instead of
# the whole row and its tail), at no cost to find what changed. Its rows cannot be loaded back: it is a bound for a
# design, not a store. The copy is built in <folder> (default /tmp/troupe-delta-ceiling); then compare:
#
#   sh bench/persistence/checkpoint-delta-ceiling.sh [folder]
#   TROUPE_BENCH_BASE=<folder>/dist node bench/system/group-commit.ts 10000 3 memory,group,memory@base,group@base
#   TROUPE_STATEMENTS_BASE=<folder>/src/persistence/sqlite-store.ts node bench/system/commit-statements.ts 10000 4096 3
#
# In both, the subjects named `base` are the bound, the others this tree. Run from the repository's root, with
# Node 22+ on PATH and this tree's node_modules installed.
set -eu
folder=${1:-/tmp/troupe-delta-ceiling}
root=$(pwd)
rm -rf "$folder"
mkdir -p "$folder"
git ls-files -- src scripts package.json 'tsconfig*.json' | tar -cf - -T - | tar -xf - -C "$folder"
ln -s "$root/node_modules" "$folder/node_modules"
node -e '
const fs = require("node:fs");
const file = process.argv[1];
let text = fs.readFileSync(file, "utf8");
const edits = [
  [
    "const rowJson = json(encoded.row, \x27the session row\x27);",
    "const bound = encoded.row as { turn?: { agent?: { checkpoint?: unknown } | null } | null; updatedAt: number };\n    const rowJson = json({ c: bound.turn?.agent?.checkpoint ?? null, u: bound.updatedAt }, \x27the session row\x27);",
  ],
  [
    "sessionDocText(rowJson, conversation.stored, conversation.tail)",
    "sessionDocText(rowJson, conversation.stored, conversation.tail.slice(-2))",
  ],
];
for (const [from, to] of edits) {
  if (!text.includes(from)) throw new Error(`checkpoint-delta-ceiling.sh: ${file} no longer has: ${from}`);
  text = text.replace(from, to);
}
fs.writeFileSync(file, text);
' "$folder/src/persistence/sqlite-store.ts"
(cd "$folder" && npm run build >/dev/null)
echo "the bound's build: $folder/dist"
