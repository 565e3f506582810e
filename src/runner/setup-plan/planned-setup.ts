// The run's setup, settled at config time: the repository's own `setup` commands, automatic
// setup's plan (no `setup`, or `setup: auto`), or none (`setup: []`).
import { planSetup } from './plan-setup.js';
import { readSetupTexts } from './read-setup-texts.js';
import type { SetupPlan } from './setup-plan-types.js';

export type PlannedSetup =
  | { source: 'config'; commands: string[] }
  /** `skipped`: why automatic setup will not run (it needs a network to install anything). */
  | { source: 'auto'; plan: SetupPlan; skipped?: string }
  | { source: 'none' };

export async function plannedSetup(
  setup: string[] | 'auto',
  network: string,
  treeDir: string,
): Promise<PlannedSetup> {
  if (setup !== 'auto')
    return setup.length > 0 ? { source: 'config', commands: setup } : { source: 'none' };
  const plan = planSetup(await readSetupTexts(treeDir));
  if (plan.candidates.length > 0 && network === 'none')
    return {
      source: 'auto',
      plan,
      skipped:
        'automatic setup did not run: `network: none` gives it no way to download what the project declares',
    };
  return { source: 'auto', plan };
}

/** Setup has commands to run. */
export function setupRuns(planned: PlannedSetup): boolean {
  if (planned.source === 'config') return true;
  return planned.source === 'auto' && !planned.skipped && planned.plan.candidates.length > 0;
}

/** What the snapshot key holds of the plan: every command of every candidate, with its source. */
export function setupKeyCommands(planned: PlannedSetup): string[] {
  if (planned.source === 'config') return planned.commands;
  if (planned.source === 'none') return [];
  return [
    'auto',
    ...planned.plan.candidates.flatMap((c) => [
      `# ${c.name}`,
      ...c.commands.map((m) => `${m.command} # ${m.from}`),
    ]),
  ];
}

/** Tree files the plan read whose content decides setup's result (workflows: their steps are in the key). */
export function setupKeyFiles(planned: PlannedSetup): string[] {
  return planned.source === 'auto'
    ? planned.plan.files.filter((f) => !f.startsWith('.github/workflows/'))
    : [];
}
