/**
 * Gives `stand-in` every member of `real` it does not define itself, each answered by the real object `of` returns:
 * whatever a later Node adds to `Request`, `Headers` or `Response` still works on the stand-in. The stand-in's
 * prototype becomes `real`, so that `instanceof` holds.
 */
export function delegate(standIn: object, real: object, of: (self: never) => object): void {
  Object.setPrototypeOf(standIn, real);
  for (const key of Reflect.ownKeys(real)) {
    if (key === 'constructor' || Object.prototype.hasOwnProperty.call(standIn, key)) continue;
    const descriptor = Object.getOwnPropertyDescriptor(real, key) as PropertyDescriptor;
    const { value, get, set } = descriptor;
    if (typeof value === 'function') {
      Object.defineProperty(standIn, key, {
        configurable: true,
        writable: true,
        value(this: never, ...args: unknown[]) {
          return (value as (...a: unknown[]) => unknown).apply(of(this), args);
        },
      });
    } else if (get !== undefined) {
      Object.defineProperty(standIn, key, {
        configurable: true,
        get(this: never) {
          return get.call(of(this));
        },
        ...(set === undefined ? {} : { set(this: never, v: unknown) {
          set.call(of(this), v);
        } }),
      });
    }
  }
}
