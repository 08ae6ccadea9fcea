const NONE: ReadonlyMap<string, never> = new Map<string, never>();

/**
 * A `Map` of entries that each belong to one account, also reachable by account: a change in one account (a server
 * created, a tool list changed, one more session opened) looks at that account's entries only, never at every
 * tenant's. An entry's account must not change while it is in the map.
 */
export class ByAccount<V> extends Map<string, V> {
  private readonly index = new Map<string, Map<string, V>>();

  constructor(private readonly accountOf: (value: V) => string) {
    super();
  }

  /** The entries of `account` (a live view: do not change the map while walking it). */
  of(account: string): ReadonlyMap<string, V> {
    return this.index.get(account) ?? NONE;
  }

  override set(key: string, value: V): this {
    this.unindex(key);
    super.set(key, value);
    const account = this.accountOf(value);
    let entries = this.index.get(account);
    if (entries === undefined) this.index.set(account, (entries = new Map()));
    entries.set(key, value);
    return this;
  }

  override delete(key: string): boolean {
    this.unindex(key);
    return super.delete(key);
  }

  override clear(): void {
    this.index.clear();
    super.clear();
  }

  private unindex(key: string): void {
    const held = super.get(key);
    if (held === undefined) return;
    const account = this.accountOf(held);
    const entries = this.index.get(account);
    if (entries === undefined) return;
    entries.delete(key);
    if (entries.size === 0) this.index.delete(account);
  }
}
