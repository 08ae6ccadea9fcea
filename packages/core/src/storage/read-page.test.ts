import Keyv from 'keyv';
import { describe, expect, it } from 'vitest';
import { IndexCalls } from './index-calls.js';
import { MemoryIndexStore } from './memory-index-store.js';
import { readPage } from './read-page.js';
import { RecordStore } from './records.js';

describe('readPage', () => {
  async function setup() {
    const records = new RecordStore(new Keyv({ throwOnErrors: true }), 't:');
    const index = new IndexCalls(new MemoryIndexStore());
    for (let i = 1; i <= 5; i++) {
      if (i !== 4) (await records.set(`r:${i}`, { n: i }))._unsafeUnwrap();
      (await index.commit({ add: [{ set: 's', member: String(i), score: i }] }))._unsafeUnwrap();
    }
    return { records, index };
  }

  it('reads one page in the listing order, with the total and a gap where a record is gone', async () => {
    const { records, index } = await setup();
    const page = (await readPage<{ n: number }>(index, records, 's', { page: 2, limit: 2 }, (id) => `r:${id}`))._unsafeUnwrap();
    expect(page).toEqual({ ids: ['3', '4'], found: [{ n: 3 }, undefined], total: 5 });
    const newest = (await readPage<{ n: number }>(index, records, 's', { page: 1, limit: 2 }, (id) => `r:${id}`, { order: 'desc' }))._unsafeUnwrap();
    expect(newest.ids).toEqual(['5', '4']);
  });

  it('answers an empty page past the end', async () => {
    const { records, index } = await setup();
    expect((await readPage(index, records, 's', { page: 9, limit: 2 }, (id) => `r:${id}`))._unsafeUnwrap()).toEqual({ ids: [], found: [], total: 5 });
  });
});
