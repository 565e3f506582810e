// The web room's one door: the run page (file and served), the runs page, the run listing.
export { runPageData, type RunPageAttempt, type RunPageData } from './run-page-data.js';
export { renderRunPage } from './render-run-page.js';
export { writeRunPage } from './write-run-page.js';
export { runPageHandler, runPageUrl, liveUpdate } from './run-page-handler.js';
export {
  filesIn,
  readAttemptTrajectories,
  recordingRunResults,
  readRunRecord,
  readTrajectory,
  writeRunRecord,
  type RunFiles,
} from './run-record.js';
export {
  queueRunListing,
  triggerOf,
  type RunFilter,
  type RunListing,
  type RunSummary,
} from './run-listing.js';
export { runsPageConfig, runsPageHandler, type RunsPageConfig } from './runs-page.js';
export { trajectoryHandler } from './trajectory-handler.js';
