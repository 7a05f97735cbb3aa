/*
 * The types of fast-check, an optional peer dependency, for the property-based helpers' signatures. The
 * declaration files of `troupe/testing` take them from here alone, and each is marked so that a project without
 * fast-check still type-checks them with `skipLibCheck: false`: there they are `any`, and calling a helper throws
 * a ConfigError naming the package to install. (@ts-expect-error would fail where fast-check is installed.)
 */

// biome-ignore lint/suspicious/noTsIgnore: the comment must reach the declaration file, where fast-check may be missing.
/** @ts-ignore A fast-check arbitrary: a generator of values of type T that fast-check can shrink. */
export type Arbitrary<T> = import('fast-check').Arbitrary<T>;

// biome-ignore lint/suspicious/noTsIgnore: the comment must reach the declaration file, where fast-check may be missing.
/** @ts-ignore The fast-check module, as `import * as fc from 'fast-check'` gives it. */
export type FastCheck = typeof import('fast-check');
