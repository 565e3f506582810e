// The import graph of a source tree, read with TypeScript's parser. Every way one module can
// reach another is an edge: `import … from`, `export … from`, a dynamic `import('…')` anywhere
// in the code, and `import('…')` in a type. Type-only imports count too: a cycle of types is
// still two rooms that cannot be read apart, so a room may not name a type of a room above it.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

/** Module (path relative to `dir`) → what it imports: other modules, or `pkg:<package>`. */
export type SourceGraph = Map<string, string[]>;

export function sourceGraph(dir: string): SourceGraph {
  const root = resolve(dir);
  const graph: SourceGraph = new Map();
  for (const file of tsFiles(root)) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022);
    const targets = moduleSpecifiers(source).map((spec) =>
      spec.startsWith('.')
        ? relative(root, resolve(dirname(file), spec.replace(/\.js$/, '.ts')))
        : `pkg:${packageName(spec)}`,
    );
    graph.set(relative(root, file), targets);
  }
  return graph;
}

/** The specifiers a module names: static, re-exported, dynamic and in types. */
export function moduleSpecifiers(source: ts.SourceFile): string[] {
  const specs: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      specs.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      specs.push(node.arguments[0].text);
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      specs.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return specs;
}

/** Top-level room of a module path relative to src/ (`github/intake/x.ts` → `github`). */
export function roomOf(file: string): string {
  const first = file.split('/')[0] as string;
  return first.endsWith('.ts') ? first.slice(0, -3) : first;
}

/** The same graph between rooms: a room → the rooms (and packages) its modules import. */
export function roomGraph(graph: SourceGraph): SourceGraph {
  const rooms = new Map<string, Set<string>>();
  for (const [file, targets] of graph) {
    const from = roomOf(file);
    const to = rooms.get(from) ?? new Set<string>();
    rooms.set(from, to);
    for (const target of targets) {
      const room = target.startsWith('pkg:') ? target : roomOf(target);
      if (room !== from) to.add(room);
    }
  }
  return new Map([...rooms].map(([room, to]) => [room, [...to].sort()]));
}

/** Every strongly connected group of more than one module (Tarjan), each sorted. */
export function importCycles(graph: SourceGraph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1) cycles.push(group.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

function packageName(spec: string): string {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] as string);
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}
