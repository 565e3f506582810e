// The run's one host clone is changed and put back by git's reading of each patch
// (phases/read-patch.ts) and copied into every sandbox brought up from it: they take turns, so an
// attempt verified early never copies a tree another attempt's patch is applied to.
const turns = new WeakMap<object, Promise<unknown>>();

export function hostTreeTurn<T>(workspace: object, fn: () => Promise<T>): Promise<T> {
  const turn = (turns.get(workspace) ?? Promise.resolve()).then(fn);
  turns.set(
    workspace,
    turn.catch(() => undefined),
  );
  return turn;
}
