// The status room's door: the one status comment per issue, edited in place, and its words.
export {
  instructionFileNotes,
  instructionFileWords,
  instructionFilesSection,
  withNotes,
} from './instruction-files-notes.js';
export {
  configSnippet,
  environmentLines,
  environmentProblem,
  environmentSection,
  testsInconclusive,
} from './environment-words.js';
export { runStatusReporter } from './run-status-reporter.js';
export {
  STATUS_COMMENT_NOTE,
  STATUS_MARKER,
  describeResult,
  ensureStatusComment,
  exitWords,
  renderStatus,
  reportWords,
  testWords,
  triggerWords,
  verificationLine,
  type StatusReporter,
  type StatusState,
} from './status-comment.js';
