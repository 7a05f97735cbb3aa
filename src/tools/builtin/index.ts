export {
  type CalculatorLimits,
  type CalculatorOptions,
  calculator,
  defaultCalculatorLimits,
  evaluateArithmetic,
} from './calculator.ts';
export {
  type DocumentSearchHit,
  type DocumentSearchOptions,
  type DocumentSearchResult,
  documentSearch,
  type EmbedFunction,
  type SearchDocument,
} from './document-search.ts';
export { type SqlQueryOptions, type SqlQueryResult, type SqlQueryTool, sqlQuery } from './sql-query.ts';
export type { QueryCell } from './sql-readonly-query.ts';
export type { SqlTableSchema } from './sql-schema.ts';
