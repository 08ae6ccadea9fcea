declare const shapeOf: unique symbol;

/** The JSON text of a value of type `T`, written once and sent as it is. */
export type JsonText<T> = string & { readonly [shapeOf]?: T };

/**
 * A list whose items are already JSON text: the envelope joins the texts instead of stringifying the values again
 * (`http/envelope.ts`). Stringified any other way (`JSON.stringify`), it is its items parsed, so it is never wrong,
 * only slower.
 */
export class JsonList<T> {
  constructor(readonly items: readonly JsonText<T>[]) {}

  toJSON(): T[] {
    return this.items.map((item) => JSON.parse(item) as T);
  }
}

/** Lists joined lately, by their first item; at most `JOINED_MAX_CHARS` of text in all. */
const joined = new Map<string, { items: readonly string[]; text: string }>();
let joinedChars = 0;
const JOINED_MAX_CHARS = 4 * 1024 * 1024;

/**
 * `items.join(',')`, remembered: a page listed again with the same items (the same texts, usually the very same
 * strings, which compare at once) is not joined again. Exact: the answer is a join of items equal to these.
 */
export function joinJson(items: readonly string[]): string {
  const first = items[0];
  if (first === undefined) return '';
  const known = joined.get(first);
  if (known !== undefined && known.items.length === items.length && known.items.every((item, i) => item === items[i])) return known.text;
  const text = items.join(',');
  if (joinedChars + text.length > JOINED_MAX_CHARS) {
    joined.clear();
    joinedChars = 0;
  }
  joined.set(first, { items, text });
  joinedChars += text.length;
  return text;
}
