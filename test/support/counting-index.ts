import { MemoryIndexStore, type RangeOptions } from '@mcp-fleet/core';

/** The memory index, counting the reads of account listings (`servers:{account}…` sets). */
export class CountingIndexStore extends MemoryIndexStore {
  listingReads = 0;

  override range(set: string, options: RangeOptions): string[] {
    if (set.startsWith('servers:')) this.listingReads += 1;
    return super.range(set, options);
  }
}
