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
