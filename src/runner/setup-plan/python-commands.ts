// The Python part of automatic setup: one venv, the requirement files at the usual places, an
// editable install of the project with the test extras it declares, and tox's test deps. Read
// from the files' text only, without running anything of the project.
import { shellQuote } from '../../shell-quote.js';
import { AUTO_VENV, type PlannedCommand, type TreeTexts } from './setup-plan-types.js';

/** The extras a project declares for its tests, in the order they are asked for. */
export const TEST_EXTRAS = ['test', 'tests', 'testing', 'dev'] as const;

const PACKAGING = ['pyproject.toml', 'setup.py', 'setup.cfg'] as const;
const TOP_REQUIREMENTS = /^requirements[^/]*\.txt$/;
const NAMED_REQUIREMENTS = ['test-requirements.txt', 'dev-requirements.txt'];
const DIR_REQUIREMENTS = /^requirements\/[^/]+\.txt$/;
// `test = [`, `"test" = [` (TOML), `test =` (setup.cfg); never a requirement like `a==1`.
const KEY = /^["']?([\w.-]+)["']?\s*[=:](?![=])/;

/** The Python files detection reads, given the tree's paths. */
export function pythonFiles(paths: readonly string[]): string[] {
  return paths.filter(
    (p) =>
      (PACKAGING as readonly string[]).includes(p) ||
      p === 'tox.ini' ||
      TOP_REQUIREMENTS.test(p) ||
      NAMED_REQUIREMENTS.includes(p) ||
      DIR_REQUIREMENTS.test(p),
  );
}

/** The venv first (kept when it exists, so a later candidate installs into the same one). */
export function venvCommand(): PlannedCommand {
  return {
    command: `test -x ${AUTO_VENV}/bin/python || python3 -m venv --system-site-packages ${AUTO_VENV}`,
    from: 'automatic setup: one venv for the project',
  };
}

/** The Python commands, or none when the tree declares nothing Python installs. */
export function pythonCommands(texts: TreeTexts): PlannedCommand[] {
  const commands: PlannedCommand[] = [];
  for (const file of requirementFiles([...texts.keys()]))
    commands.push({ command: `pip install -r ${shellQuote(file)}`, from: file });
  const packaging = PACKAGING.find((p) => texts.has(p));
  if (packaging) {
    const { extras, from } = declaredExtras(texts);
    const target = extras.length > 0 ? `.[${extras.join(',')}]` : '.';
    commands.push({
      command: `pip install -e ${shellQuote(target)}`,
      from: from ?? packaging,
    });
  }
  const tox = toxDeps(texts.get('tox.ini'));
  if (tox.length > 0)
    commands.push({
      command: `pip install ${tox.map(shellQuote).join(' ')}`,
      from: 'tox.ini [testenv] deps',
    });
  return commands.length > 0 ? [venvCommand(), ...commands] : [];
}

/** Requirement files, the project's main ones first, then the rest by name. */
function requirementFiles(paths: readonly string[]): string[] {
  const rank = (p: string) => (p === 'requirements.txt' ? 0 : TOP_REQUIREMENTS.test(p) ? 1 : 2);
  return paths
    .filter(
      (p) => TOP_REQUIREMENTS.test(p) || NAMED_REQUIREMENTS.includes(p) || DIR_REQUIREMENTS.test(p),
    )
    .sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/** The test extras of the first packaging file that declares any, and where it said so. */
export function declaredExtras(texts: TreeTexts): { extras: string[]; from?: string } {
  const sources: [string, (text: string) => string[]][] = [
    ['pyproject.toml', pyprojectExtras],
    ['setup.cfg', setupCfgExtras],
    ['setup.py', setupPyExtras],
  ];
  for (const [file, read] of sources) {
    const text = texts.get(file);
    if (text === undefined) continue;
    const found = new Set(read(text));
    const extras = TEST_EXTRAS.filter((e) => found.has(e));
    if (extras.length > 0) return { extras: [...extras], from: `${file} [${extras.join(',')}]` };
  }
  return { extras: [] };
}

/** Keys of `[project.optional-dependencies]` (TOML, read line by line). */
function pyprojectExtras(text: string): string[] {
  return sectionKeys(text, /^\[project\.optional-dependencies\]\s*(#.*)?$/, KEY);
}

/** Keys of `[options.extras_require]` in setup.cfg. */
function setupCfgExtras(text: string): string[] {
  return sectionKeys(text, /^\[options\.extras_require\]\s*$/, KEY);
}

/** The string keys of a literal `extras_require={...}` in setup.py. */
function setupPyExtras(text: string): string[] {
  const start = text.search(/extras_require\s*=\s*\{/);
  if (start < 0) return [];
  const body = text.slice(start, start + 4000);
  return [...body.matchAll(/['"]([\w.-]+)['"]\s*:/g)].map((m) => m[1]!);
}

function sectionKeys(text: string, header: RegExp, key: RegExp): string[] {
  const keys: string[] = [];
  let inside = false;
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    if (/^\[/.test(line)) {
      inside = header.test(line.trim());
      continue;
    }
    const match = inside && !/^\s/.test(line) ? key.exec(line) : null;
    if (match) keys.push(match[1]!.replace(/^["']|["']$/g, ''));
  }
  return keys;
}

/** `[testenv] deps` of tox.ini: plain requirements only (no `-r`, no `{...}` substitution). */
export function toxDeps(text: string | undefined): string[] {
  if (text === undefined) return [];
  const deps: string[] = [];
  let section = '';
  let inDeps = false;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\s+#.*$/, '').trimEnd();
    if (/^\[.*\]$/.test(line.trim())) {
      section = line.trim();
      inDeps = false;
      continue;
    }
    if (section !== '[testenv]') continue;
    const start = /^deps\s*=\s*(.*)$/.exec(line);
    if (start) {
      inDeps = true;
      deps.push(start[1]!);
    } else if (inDeps && /^\s+\S/.test(line)) deps.push(line.trim());
    else if (line.trim() !== '') inDeps = false;
  }
  return deps
    .map((d) => d.trim())
    .filter((d) => d !== '' && !d.startsWith('-') && !d.includes('{') && !/^#/.test(d));
}
