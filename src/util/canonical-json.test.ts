import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonical-json.ts';

describe('canonicalJson', () => {
  it('is the same string whatever order the keys were built in, at every depth', () => {
    const a = { b: 1, a: { y: [1, { q: 2, p: 'x' }], x: null } };
    const b = { a: { x: null, y: [1, { p: 'x', q: 2 }] }, b: 1 };
    expect(canonicalJson(a)).toBe(canonicalJson(b));
    expect(canonicalJson(a)).toBe('{"a":{"x":null,"y":[1,{"p":"x","q":2}]},"b":1}');
  });

  it('keeps array order and tells values apart', () => {
    expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]));
    expect(canonicalJson({ a: '1' })).not.toBe(canonicalJson({ a: 1 }));
    expect(canonicalJson({ a: 1 })).not.toBe(canonicalJson({ a: 1, b: 0 }));
  });

  it('equals the canonical form of the value read back from JSON (undefined dropped, as the other side sees it)', () => {
    const v = { a: undefined, b: [undefined, 1], c: new Date(0), d: -0 };
    expect(canonicalJson(v)).toBe(canonicalJson(JSON.parse(JSON.stringify(v))));
    expect(canonicalJson(v)).toBe('{"b":[null,1],"c":"1970-01-01T00:00:00.000Z","d":0}');
  });

  it('refuses a value with no JSON form', () => {
    expect(() => canonicalJson(undefined)).toThrow(/no JSON form/);
  });
});
