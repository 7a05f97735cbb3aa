import type { JsonObject, JsonValue } from '../core/json.ts';
import { type FastCheck, fastCheck } from './fast-check.ts';
import type { Arbitrary } from './fast-check-types.ts';

/**
 * Values for a JSON Schema (the subset tool and output schemas use): `type` (one or several), `enum`, `const`,
 * `anyOf` / `oneOf`, objects (`properties`, `required`), arrays (`items`, `minItems`, `maxItems`), strings
 * (`minLength`, `maxLength`, `pattern`, the formats email, uri, uuid and date-time), numbers and integers
 * (`minimum`, `maximum` and their exclusive forms), booleans and null. A schema it does not understand gets any
 * small JSON value.
 */
export function arbitraryFromSchema(schema: JsonValue | undefined): Arbitrary<JsonValue> {
  return schemaArbitrary(fastCheck('arbitraryFromSchema()'), schema, 0);
}

function schemaArbitrary(fc: FastCheck, schema: JsonValue | undefined, depth: number): Arbitrary<JsonValue> {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema) || depth > 6)
    return fc.jsonValue({ maxDepth: 1 }) as Arbitrary<JsonValue>;
  if (Object.hasOwn(schema, 'const')) return fc.constant(schema.const as JsonValue);
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return fc.constantFrom(...schema.enum);
  const choices = Array.isArray(schema.anyOf)
    ? schema.anyOf
    : Array.isArray(schema.oneOf)
      ? schema.oneOf
      : undefined;
  if (choices && choices.length > 0)
    return fc.oneof(...choices.map((choice) => schemaArbitrary(fc, choice, depth + 1)));
  const type = Array.isArray(schema.type)
    ? schema.type
    : schema.type === undefined
      ? undefined
      : [schema.type];
  if (type && type.length > 1)
    return fc.oneof(...type.map((one) => schemaArbitrary(fc, { ...schema, type: one }, depth + 1)));
  const number = (key: string): number | undefined =>
    typeof schema[key] === 'number' ? (schema[key] as number) : undefined;
  switch (type?.[0] ?? (schema.properties ? 'object' : undefined)) {
    case 'object': {
      const properties = isObject(schema.properties) ? schema.properties : {};
      const required = Array.isArray(schema.required)
        ? schema.required.filter((key) => typeof key === 'string')
        : [];
      const model: Record<string, Arbitrary<JsonValue>> = {};
      for (const [key, child] of Object.entries(properties))
        model[key] = schemaArbitrary(fc, child, depth + 1);
      return fc.record(model, {
        requiredKeys: required.filter((key) => Object.hasOwn(model, key)),
      }) as Arbitrary<JsonValue>;
    }
    case 'array': {
      const minLength = number('minItems') ?? 0;
      const maxLength = Math.max(minLength, Math.min(number('maxItems') ?? 3, minLength + 3));
      return fc.array(schemaArbitrary(fc, schema.items, depth + 1), { minLength, maxLength });
    }
    case 'string': {
      if (typeof schema.pattern === 'string') {
        const matching = stringsMatching(fc, schema.pattern);
        if (matching) return matching;
      }
      switch (schema.format) {
        case 'email':
          return fc.emailAddress();
        case 'uri':
        case 'url':
          return fc.webUrl();
        case 'uuid':
          return fc.uuid();
        case 'date-time':
          return fc
            .date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true })
            .map((date) => date.toISOString());
      }
      const minLength = number('minLength') ?? 0;
      return fc.string({
        minLength,
        maxLength: Math.max(minLength, Math.min(number('maxLength') ?? 12, minLength + 12)),
      });
    }
    case 'integer': {
      const min = number('minimum') ?? (number('exclusiveMinimum') ?? -1001) + 1;
      const max = number('maximum') ?? (number('exclusiveMaximum') ?? 1001) - 1;
      return fc.integer({ min: Math.ceil(min), max: Math.floor(Math.max(min, max)) });
    }
    case 'number': {
      const min = number('minimum') ?? number('exclusiveMinimum') ?? -1000;
      const max = number('maximum') ?? number('exclusiveMaximum') ?? 1000;
      return fc
        .double({
          min,
          max: Math.max(min, max),
          noNaN: true,
          noDefaultInfinity: true,
          minExcluded: number('exclusiveMinimum') !== undefined,
          maxExcluded: number('exclusiveMaximum') !== undefined,
        })
        .map((value) => (Object.is(value, -0) ? 0 : value));
    }
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    default:
      return fc.jsonValue({ maxDepth: 1 }) as Arbitrary<JsonValue>;
  }
}

/**
 * One value for a JSON Schema, the same every time: `variant` 0 and 1 give two different values where the schema
 * allows it (two distinct calls of the same tool). Strings with a pattern or a format get a plain string.
 */
export function exampleFromSchema(schema: JsonValue | undefined, variant = 0): JsonValue {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return variant;
  if (Object.hasOwn(schema, 'const')) return schema.const as JsonValue;
  if (Array.isArray(schema.enum) && schema.enum.length > 0)
    return schema.enum[variant % schema.enum.length] as JsonValue;
  const choices = Array.isArray(schema.anyOf)
    ? schema.anyOf
    : Array.isArray(schema.oneOf)
      ? schema.oneOf
      : undefined;
  if (choices?.[0] !== undefined) return exampleFromSchema(choices[0], variant);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  const number = (key: string): number | undefined =>
    typeof schema[key] === 'number' ? (schema[key] as number) : undefined;
  switch (type ?? (schema.properties ? 'object' : undefined)) {
    case 'object': {
      const properties = isObject(schema.properties) ? schema.properties : {};
      const value: JsonObject = {};
      for (const [key, child] of Object.entries(properties)) value[key] = exampleFromSchema(child, variant);
      return value;
    }
    case 'array':
      return Array.from({ length: Math.max(1, number('minItems') ?? 1) }, () =>
        exampleFromSchema(schema.items, variant),
      );
    case 'string': {
      if (schema.format === 'email') return `user${variant + 1}@example.com`;
      if (schema.format === 'uri' || schema.format === 'url') return `https://example.com/${variant + 1}`;
      const text = `value ${variant + 1}`;
      const minLength = number('minLength') ?? 0;
      return text.padEnd(minLength, 'x').slice(0, number('maxLength') ?? Number.POSITIVE_INFINITY);
    }
    case 'integer':
    case 'number': {
      const min =
        number('minimum') ??
        (number('exclusiveMinimum') ?? 0) + (number('exclusiveMinimum') === undefined ? 0 : 1);
      const max = number('maximum') ?? number('exclusiveMaximum') ?? min + 100;
      return Math.min(Math.ceil(min) + 1 + variant, Math.floor(max));
    }
    case 'boolean':
      return variant % 2 === 1;
    case 'null':
      return null;
    default:
      return variant;
  }
}

/**
 * Arguments with a required field missing or of the wrong type, for a tool whose schema has properties; undefined
 * when the schema declares none (no argument object could be wrong).
 */
export function wrongArguments(schema: JsonValue | undefined): JsonObject | undefined {
  const valid = exampleFromSchema(schema);
  if (!isObject(valid) || Object.keys(valid).length === 0) return undefined;
  const [key, value] = Object.entries(valid)[0] as [string, JsonValue];
  return {
    ...valid,
    [key]: typeof value === 'string' ? 12345 : `not a ${Array.isArray(value) ? 'array' : typeof value}`,
  };
}

/** Strings for a `pattern`, or undefined when it is not a regular expression fast-check can generate from. */
function stringsMatching(fc: FastCheck, pattern: string): Arbitrary<JsonValue> | undefined {
  try {
    return fc.stringMatching(new RegExp(pattern, 'u'));
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
