// What automatic setup plans (issue 25): candidates made only of what the repository's own files
// declare, each command with the file it came from, and the files read (the snapshot key hashes
// them). Detection is a pure function of those files (plan-setup.ts); the commands run in the
// sandbox (runner/phases/auto-setup.ts).

export type Ecosystem = 'python' | 'node';

/** One setup command and where it came from (`pyproject.toml [test]`, `requirements.txt`, …). */
export interface PlannedCommand {
  command: string;
  from: string;
}

/** A way to set the project up: tried whole, kept when the test command can use its result. */
export interface SetupCandidate {
  /** `project files`, `.devcontainer/devcontainer.json`, `.github/workflows/ci.yml`. */
  name: string;
  commands: PlannedCommand[];
}

export interface SetupPlan {
  ecosystems: Ecosystem[];
  /** In the order they are tried. */
  candidates: SetupCandidate[];
  /** Tree-relative files the plan was made from, sorted: what the snapshot key hashes. */
  files: string[];
  /** What the plan saw but will not do, in one line each (`yarn.lock: …`). */
  notes: string[];
}

/** The files detection reads, by tree-relative path (regular files only, capped, UTF-8). */
export type TreeTexts = ReadonlyMap<string, string>;

/** The one environment automatic setup installs into; first on PATH for every exec. */
export const AUTO_VENV = '~/.venv';
