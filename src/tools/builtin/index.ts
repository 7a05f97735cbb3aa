export {
  type CalculatorLimits,
  type CalculatorOptions,
  calculator,
  defaultCalculatorLimits,
  evaluateArithmetic,
} from './calculator.ts';
