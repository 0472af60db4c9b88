/**
 * The one-line bodies of repo-repair's functions, as data, so that the generator can plant a bug
 * of a named kind, compute what the correct and the buggy code return, and render both as Python.
 * Every body is an expression of the arguments a and b (small ints) with one constant k:
 *
 *   linear  a * 3 + b            constant (k), operator (either operator)
 *   cond    a - b if a > b else b + 4    constant (k), branch (the comparison turned around)
 *   call    diff(a, b) * 3 / pow(a, 2) - b    constant (k), argument order (the call's arguments swapped)
 *
 * diff is the package's own helper (calc/base.py); pow is Python's.
 */
export const BUG_KINDS = ['constant', 'operator', 'branch', 'argument-order'] as const;
export type BugKind = (typeof BUG_KINDS)[number];

export type Body =
  | { kind: 'linear'; op1: '*' | '+'; k: number; op2: '+' | '-' }
  | { kind: 'cond'; cmp: '>' | '<' | '>=' | '<='; k: number }
  | { kind: 'call'; fn: 'diff' | 'pow'; swapped: boolean; k: number };

/** Which body kinds can carry a bug of each kind. */
export const BODIES_FOR: Record<BugKind, readonly Body['kind'][]> = {
  constant: ['linear', 'cond', 'call'],
  operator: ['linear'],
  branch: ['cond'],
  'argument-order': ['call'],
};

/** The Python expression (single spaces, so that words of it join back into it). */
export function renderBody(b: Body): string {
  switch (b.kind) {
    case 'linear':
      return `a ${b.op1} ${b.k} ${b.op2} b`;
    case 'cond':
      return `a - b if a ${b.cmp} b else b + ${b.k}`;
    case 'call': {
      if (b.fn === 'diff') return `diff(${b.swapped ? 'b, a' : 'a, b'}) * ${b.k}`;
      return `pow(${b.swapped ? `${b.k}, a` : `a, ${b.k}`}) - b`;
    }
  }
}

/** What Python returns for these arguments. */
export function evalBody(b: Body, a: number, x: number): number {
  switch (b.kind) {
    case 'linear':
      return (b.op1 === '*' ? a * b.k : a + b.k) + (b.op2 === '+' ? x : -x);
    case 'cond': {
      const take = { '>': a > x, '<': a < x, '>=': a >= x, '<=': a <= x }[b.cmp];
      return take ? a - x : x + b.k;
    }
    case 'call':
      if (b.fn === 'diff') return (b.swapped ? x - a : a - x) * b.k;
      return (b.swapped ? b.k ** a : a ** b.k) - x;
  }
}

const FLIP = { '>': '<', '<': '>', '>=': '<=', '<=': '>=' } as const;

/** The body with a bug of this kind planted (k moves by 1 or 2 for a constant). */
export function plantBug(b: Body, kind: BugKind, pick: (n: number) => number): Body {
  if (kind === 'constant') {
    const max = b.kind === 'call' && b.fn === 'pow' ? 3 : 9;
    const options = [b.k - 2, b.k - 1, b.k + 1, b.k + 2].filter((k) => k >= 2 && k <= max);
    return { ...b, k: options[pick(options.length)]! };
  }
  if (kind === 'operator' && b.kind === 'linear') {
    return pick(2) === 0 ? { ...b, op1: b.op1 === '*' ? '+' : '*' } : { ...b, op2: b.op2 === '+' ? '-' : '+' };
  }
  if (kind === 'branch' && b.kind === 'cond') return { ...b, cmp: FLIP[b.cmp] };
  if (kind === 'argument-order' && b.kind === 'call') return { ...b, swapped: !b.swapped };
  throw new Error(`internal: a ${b.kind} body cannot carry a ${kind} bug`);
}
