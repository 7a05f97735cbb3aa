import type { Mean } from './output-estimates.ts';
import type { ResourceNotice } from './resource-notices.ts';

/** What a resource manager keeps of an open run. */
export interface OpenRun {
  tenant: string;
  /** The run's budget scope. */
  scope: string;
  /** Receives the notices of the run's calls. */
  sink: ((notice: ResourceNotice) => void) | undefined;
  /** The sink when it keeps `granted` notices (a run's event stream does not): else undefined. */
  grantSink: ((notice: ResourceNotice) => void) | undefined;
  /** What its calls wrote, per model (see OutputEstimates). */
  means: Mean[];
  /**
   * False once the run is closed or opened again (which makes a new record): a grant that carries this record then
   * looks its run up by session.
   */
  open: boolean;
}
