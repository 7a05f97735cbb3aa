export {
  type ScriptedModel,
  type ScriptedModelOptions,
  type ScriptedTurn,
  type ScriptedTurns,
  scriptedModel,
} from './scripted-model.ts';
