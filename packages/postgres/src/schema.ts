/**
 * The store's SQL, as a DBA reads it: `migrationSql()` prints every migration for a schema (docs/postgres.md).
 *
 * Locks. The index's commits and the rate-limit decisions serialise on transaction-level advisory locks, one per claim
 * key, per set name and per counter key (64-bit ids from `hashtextextended`), taken in ascending id order before the
 * first read: two calls wait for each other only where they touch the same key, and never in a cycle, so they never
 * deadlock. A lock also covers a row that does not exist yet (a free claim, a new counter), which a row lock cannot.
 * Everything is read after the locks are held; in a VOLATILE plpgsql function at READ COMMITTED each statement takes
 * a new snapshot, so it sees what the previous holder committed.
 */

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** `"name"`: a schema name as SQL quotes it. The name itself is checked by `checkSchemaName`. */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

function quoteLiteral(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

/** A plain identifier: letters, digits, `_`, up to 63 bytes (PostgreSQL's limit), not starting with a digit. */
export function checkSchemaName(schema: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) {
    throw new TypeError(`createPostgresStore: schema must be a plain identifier (letters, digits, _; up to 63), got ${JSON.stringify(schema)}`);
  }
  return schema;
}

/** The advisory lock id of a claim key, a set name or a counter key (`expression`, SQL text) in `schema`. */
function lockId(schema: string, kind: 'claim' | 'set' | 'counter', expression: string): string {
  // Lock ids are per schema: two stores in two schemas of one database never wait for each other.
  return `hashtextextended(${quoteLiteral(`${schema}:${kind}:`)} || ${expression}, 0)`;
}

/**
 * Every lock id an index commit `tx` (a jsonb expression) takes, duplicates included, as a UNION ALL of one-column
 * SELECTs: one per claim key and released key, one per set it adds to, removes from or limits.
 */
function commitLockIds(schema: string, tx: string): string {
  const each = (kind: 'claim' | 'set', part: string, field: string) =>
    `SELECT ${lockId(schema, kind, `(e->>'${field}')`)} FROM jsonb_array_elements(coalesce(${tx}->'${part}', '[]')) e`;
  return [each('claim', 'claims', 'key'), each('claim', 'releases', 'key'), each('set', 'add', 'set'), each('set', 'remove', 'set'), each('set', 'limits', 'set')].join('\n      UNION ALL ');
}

/**
 * Steps 2 to 4 of an index commit (its checks and its writes), for a caller that holds every lock of `tx`: the body of
 * `commit_index` in migration 1, of `commit_index_locked` from migration 4 on. Returns from the function it is in.
 */
function commitChecksAndWrites(schema: string): string {
  const s = quoteIdentifier(schema);
  return `-- 2. The first claim held by another owner (neither the claimant nor the one it replaces), in the order given.
  SELECT t.i, c.owner, c.since INTO found_at, held_owner, held_since
    FROM jsonb_array_elements(coalesce(tx->'claims', '[]')) WITH ORDINALITY t(e, i)
    JOIN ${s}.claims c ON c.key = t.e->>'key'
   WHERE c.owner <> t.e->>'owner' AND c.owner IS DISTINCT FROM t.e->>'replacing'
   ORDER BY t.i LIMIT 1;
  IF found_at IS NOT NULL THEN
    RETURN jsonb_build_object('ok', false, 'conflict', found_at, 'owner', held_owner, 'since', held_since);
  END IF;

  -- 3. The first limited set already holding max members or more, counted before the commit.
  SELECT t.i INTO found_at
    FROM jsonb_array_elements(coalesce(tx->'limits', '[]')) WITH ORDINALITY t(e, i)
    LEFT JOIN ${s}.sets st ON st.name = t.e->>'set'
   WHERE coalesce(st.size, 0) >= (t.e->>'max')::numeric
   ORDER BY t.i LIMIT 1;
  IF found_at IS NOT NULL THEN
    RETURN jsonb_build_object('ok', false, 'full', found_at);
  END IF;

  -- 4. The writes: releases, claims, removals, additions.
  DELETE FROM ${s}.claims c USING jsonb_array_elements(coalesce(tx->'releases', '[]')) e
   WHERE c.key = e->>'key' AND c.owner = e->>'owner';

  INSERT INTO ${s}.claims AS c (key, owner, since)
  SELECT DISTINCT ON (e->>'key') e->>'key', e->>'owner', coalesce(claimed_at, (extract(epoch FROM clock_timestamp()) * 1000)::bigint)
    FROM jsonb_array_elements(coalesce(tx->'claims', '[]')) WITH ORDINALITY t(e, i)
   ORDER BY e->>'key', i DESC
  ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, since = excluded.since WHERE c.owner <> excluded.owner;

  WITH gone AS (
    DELETE FROM ${s}.set_members m
     USING (SELECT DISTINCT e->>'set' AS set_name, e->>'member' AS member FROM jsonb_array_elements(coalesce(tx->'remove', '[]')) e) r
     WHERE m.set_name = r.set_name AND m.member = r.member
    RETURNING m.set_name
  )
  UPDATE ${s}.sets st SET size = st.size - g.n
    FROM (SELECT set_name, count(*) AS n FROM gone GROUP BY set_name) g
   WHERE st.name = g.set_name;

  -- A member named twice takes its last score; xmax = 0 tells a new member from a re-scored one.
  WITH added AS (
    INSERT INTO ${s}.set_members AS m (set_name, member, score)
    SELECT DISTINCT ON (e->>'set', e->>'member') e->>'set', e->>'member', (e->>'score')::double precision
      FROM jsonb_array_elements(coalesce(tx->'add', '[]')) WITH ORDINALITY t(e, i)
     ORDER BY e->>'set', e->>'member', i DESC
    ON CONFLICT (set_name, member) DO UPDATE SET score = excluded.score
    RETURNING m.set_name, (m.xmax = 0) AS fresh
  )
  INSERT INTO ${s}.sets AS st (name, size)
  SELECT set_name, count(*) FILTER (WHERE fresh) FROM added GROUP BY set_name
  ON CONFLICT (name) DO UPDATE SET size = st.size + excluded.size;

  RETURN '{"ok":true}'::jsonb;`;
}

/** The refusal of any isolation level but READ COMMITTED, which the locks' argument needs (each statement a new snapshot). */
function readCommittedOnly(name: string): string {
  return `IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'mcp-fleet: ${name} runs at READ COMMITTED, not %', current_setting('transaction_isolation');
  END IF;`;
}

function version1(schema: string): string {
  const s = quoteIdentifier(schema);
  return `
-- Records: the fleet's Keyv (servers, API keys, tool calls, webhooks, the outbox's events, MCP session records).
-- value is Keyv's serialised text; expires_at is on the database's clock, NULL for no expiry.
CREATE TABLE ${s}.records (
  key        text COLLATE "C" PRIMARY KEY,
  value      text NOT NULL,
  expires_at timestamptz
);
CREATE INDEX records_expires_at ON ${s}.records (expires_at) WHERE expires_at IS NOT NULL;

-- Name claims: a key owned by one owner (a server's name by its id); since is Unix ms.
CREATE TABLE ${s}.claims (
  key   text COLLATE "C" PRIMARY KEY,
  owner text NOT NULL,
  since bigint NOT NULL
);

-- Ordered sets (listings, quotas, due deliveries): members by score, then member byte by byte ("C").
CREATE TABLE ${s}.set_members (
  set_name text COLLATE "C" NOT NULL,
  member   text COLLATE "C" NOT NULL,
  score    double precision NOT NULL,
  PRIMARY KEY (set_name, member)
);
CREATE INDEX set_members_order ON ${s}.set_members (set_name, score, member);

-- Each set's size, kept by commit_index, so that count() and a quota read one row at any size.
CREATE TABLE ${s}.sets (
  name text COLLATE "C" PRIMARY KEY,
  size bigint NOT NULL
);

-- Rate-limit counters and leases (a lease is a counter of limit 1): a fixed window ending at expires_at.
CREATE TABLE ${s}.counters (
  key        text COLLATE "C" PRIMARY KEY,
  count      bigint NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX counters_expires_at ON ${s}.counters (expires_at);

-- One index commit, all or nothing, in one call. tx: {claims, releases, add, remove, limits} as IndexTransaction,
-- scores as text ('Infinity' included). claimed_at: Unix ms of the claims taken, NULL for the database's clock.
-- Returns {"ok":true}, {"ok":false,"conflict":i,"owner":…,"since":…} (i: 1-based position in claims) or
-- {"ok":false,"full":i} (i: 1-based position in limits). A refused commit has written nothing.
CREATE FUNCTION ${s}.commit_index(tx jsonb, claimed_at bigint) RETURNS jsonb
LANGUAGE plpgsql AS $fn$
DECLARE
  lock_id bigint;
  found_at bigint;
  held_owner text;
  held_since bigint;
BEGIN
  ${readCommittedOnly('commit_index')}
  -- 1. Every claim key and set name the commit touches, locked in ascending id order.
  FOR lock_id IN
    SELECT DISTINCT id FROM (
      ${commitLockIds(schema, 'tx')}
    ) touched(id) ORDER BY id
  LOOP
    PERFORM pg_advisory_xact_lock(lock_id);
  END LOOP;

  ${commitChecksAndWrites(schema)}
END
$fn$;

${consumeFunction(schema, 'CREATE', false)}
-- Deletes up to batch expired records and batch expired counters; returns how many. Reads never return an expired
-- row; this only frees the space. SKIP LOCKED: a row being written is left for the next sweep, and the delete
-- checks expiry again on the row it deletes, so a counter started again meanwhile is kept.
CREATE FUNCTION ${s}.sweep(batch integer) RETURNS bigint
LANGUAGE sql AS $fn$
  WITH r AS (
    DELETE FROM ${s}.records WHERE expires_at <= clock_timestamp() AND key IN (
      SELECT key FROM ${s}.records WHERE expires_at <= clock_timestamp() LIMIT batch FOR UPDATE SKIP LOCKED)
    RETURNING 1
  ), c AS (
    DELETE FROM ${s}.counters WHERE expires_at <= clock_timestamp() AND key IN (
      SELECT key FROM ${s}.counters WHERE expires_at <= clock_timestamp() LIMIT batch FOR UPDATE SKIP LOCKED)
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM r) + (SELECT count(*) FROM c);
$fn$;
`;
}

/**
 * The rate-limit decision (`consume`), as `verb` (`CREATE`, or `CREATE OR REPLACE` in a later migration) makes it.
 * `asyncCommit`: the decision's transaction commits without waiting for the WAL flush (migration 2).
 */
function consumeFunction(schema: string, verb: 'CREATE' | 'CREATE OR REPLACE', asyncCommit: boolean): string {
  const s = quoteIdentifier(schema);
  return `-- One rate-limit decision over every counter of a request, in one call. Admitted only if each counter's count plus
-- its cost is within its limit; then each cost > 0 is added (a counter is created, or started again once its window
-- has ended, with expires_ms as its end). A refusal writes nothing. Returns {1 or 0 (allowed), each count after}.
${verb} FUNCTION ${s}.consume(keys text[], limits bigint[], costs bigint[], expires_ms bigint) RETURNS bigint[]
LANGUAGE plpgsql AS $fn$
DECLARE
  lock_id bigint;
  clock timestamptz;
  counts bigint[];
BEGIN
  ${readCommittedOnly('consume')}${asyncCommit ? `
  -- The decision's commit does not wait for the WAL to reach the disk: the counters' locks are held for the call, not
  -- for a flush, and a hot account's requests stop queueing behind each other's fsync. A PostgreSQL crash can forget
  -- the last moments of counts (at most 3 × wal_writer_delay); nothing else of the schema commits this way.
  PERFORM set_config('synchronous_commit', 'off', true);` : ''}
  FOR lock_id IN SELECT DISTINCT ${lockId(schema, 'counter', 'k')} AS id FROM unnest(keys) k ORDER BY id LOOP
    PERFORM pg_advisory_xact_lock(lock_id);
  END LOOP;
  -- Read after the locks: the window ends on the database's clock, whichever process asks.
  clock := clock_timestamp();
  SELECT coalesce(array_agg(coalesce(c.count, 0) ORDER BY t.i), '{}') INTO counts
    FROM unnest(keys) WITH ORDINALITY t(k, i)
    LEFT JOIN ${s}.counters c ON c.key = t.k AND c.expires_at > clock;
  IF EXISTS (SELECT 1 FROM generate_subscripts(keys, 1) i WHERE counts[i] + costs[i] > limits[i]) THEN
    RETURN array_prepend(0::bigint, counts);
  END IF;
  WITH written AS (
    INSERT INTO ${s}.counters AS c (key, count, expires_at)
    SELECT u.k, sum(u.cost), to_timestamp(expires_ms / 1000.0) FROM unnest(keys, costs) u(k, cost) WHERE u.cost > 0 GROUP BY u.k
    ON CONFLICT (key) DO UPDATE SET
      count = CASE WHEN c.expires_at > clock THEN c.count + excluded.count ELSE excluded.count END,
      expires_at = CASE WHEN c.expires_at > clock THEN c.expires_at ELSE excluded.expires_at END
    RETURNING c.key, c.count
  )
  SELECT coalesce(array_agg(coalesce(w.count, counts[t.i]) ORDER BY t.i), '{}') INTO counts
    FROM unnest(keys) WITH ORDINALITY t(k, i) LEFT JOIN written w ON w.key = t.k;
  RETURN array_prepend(1::bigint, counts);
END
$fn$;`;
}

/** The write of the records `record_keys[i]`, `record_values[i]` (no expiry) in key order, a key given twice taking its last value. */
function recordsInsert(schema: string, indent: string): string {
  const s = quoteIdentifier(schema);
  return [
    `INSERT INTO ${s}.records AS r (key, value, expires_at)`,
    `SELECT DISTINCT ON (e.key) e.key, e.value, NULL FROM unnest(record_keys, record_values) WITH ORDINALITY e(key, value, i) ORDER BY e.key, e.i DESC`,
    `ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = NULL`,
  ].join(`\n${indent}`);
}

function version3(schema: string): string {
  const s = quoteIdentifier(schema);
  return `
-- One index commit that also writes records, in one call: commit_index(tx, claimed_at) as it is (its locks, checks and
-- writes), then, only if it went through, each record (record_keys[i], record_values[i]: Keyv's serialised text, no
-- expiry) in the same transaction. A refused commit writes no record. Returns commit_index's answer. A server's create
-- is one call of it: the name claim, the quota, the listings, the outbox's publication and the record land together.
-- The record rows are locked after the advisory locks, in key order; their keys are new ids, which nobody waits on.
CREATE FUNCTION ${s}.commit_with_records(tx jsonb, claimed_at bigint, record_keys text[], record_values text[]) RETURNS jsonb
LANGUAGE plpgsql AS $fn$
DECLARE
  answer jsonb;
BEGIN
  answer := ${s}.commit_index(tx, claimed_at);
  IF (answer->>'ok')::boolean THEN
    ${recordsInsert(schema, '    ')};
  END IF;
  RETURN answer;
END
$fn$;
`;
}

function version4(schema: string): string {
  const s = quoteIdentifier(schema);
  return `
-- Every lock id an index commit takes, duplicates included (callers take them DISTINCT, in ascending order).
CREATE FUNCTION ${s}.commit_lock_ids(tx jsonb) RETURNS SETOF bigint
LANGUAGE sql IMMUTABLE AS $fn$
  ${commitLockIds(schema, 'tx')}
$fn$;

-- commit_index's checks and writes, for a caller already holding every lock commit_lock_ids(tx) names (commit_index,
-- commit_batch). Called without them it is not exact: nothing else may call it.
CREATE FUNCTION ${s}.commit_index_locked(tx jsonb, claimed_at bigint) RETURNS jsonb
LANGUAGE plpgsql AS $fn$
DECLARE
  found_at bigint;
  held_owner text;
  held_since bigint;
BEGIN
  ${commitChecksAndWrites(schema)}
END
$fn$;

-- commit_index as before: its locks in ascending id order, then its checks and writes.
CREATE OR REPLACE FUNCTION ${s}.commit_index(tx jsonb, claimed_at bigint) RETURNS jsonb
LANGUAGE plpgsql AS $fn$
DECLARE
  lock_id bigint;
BEGIN
  ${readCommittedOnly('commit_index')}
  FOR lock_id IN SELECT DISTINCT id FROM ${s}.commit_lock_ids(tx) id ORDER BY id LOOP
    PERFORM pg_advisory_xact_lock(lock_id);
  END LOOP;
  RETURN ${s}.commit_index_locked(tx, claimed_at);
END
$fn$;

-- Records of commits that went through (Keyv's serialised text, no expiry), written as commit_with_records writes its
-- own: in key order, a key given twice taking its last value.
CREATE FUNCTION ${s}.write_records(record_keys text[], record_values text[]) RETURNS void
LANGUAGE sql AS $fn$
  ${recordsInsert(schema, '  ')};
$fn$;

-- Group commit: several commits with records in one transaction, one lock acquisition and one WAL flush for all.
-- items: [{"tx": …, "claimed_at": Unix ms or null}, …], each as commit_with_records takes them; record_items[j] is the
-- 1-based item record_keys[j] and record_values[j] belong to. The union of every item's locks is taken first, in
-- ascending id order (as one commit takes its own: no deadlock with any other call); then each item is checked and
-- written in order by commit_index_locked, seeing the writes of the items before it (a quota counts them). A refused
-- item writes nothing, and its records are not written. Returns the items' answers, in order, as commit_index gives
-- them. An error (of any item) rolls back every item.
CREATE FUNCTION ${s}.commit_batch(items jsonb, record_items integer[], record_keys text[], record_values text[]) RETURNS jsonb
LANGUAGE plpgsql AS $fn$
DECLARE
  lock_id bigint;
  item jsonb;
  answer jsonb;
  answers jsonb[] := '{}';
  landed integer[] := '{}';
BEGIN
  ${readCommittedOnly('commit_batch')}
  FOR lock_id IN SELECT DISTINCT id FROM jsonb_array_elements(items) t(e), ${s}.commit_lock_ids(t.e->'tx') id ORDER BY id LOOP
    PERFORM pg_advisory_xact_lock(lock_id);
  END LOOP;
  FOR item IN SELECT t.e FROM jsonb_array_elements(items) WITH ORDINALITY t(e, i) ORDER BY t.i LOOP
    answer := ${s}.commit_index_locked(item->'tx', (item->>'claimed_at')::bigint);
    answers := answers || answer;
    IF (answer->>'ok')::boolean THEN
      landed := landed || cardinality(answers);
    END IF;
  END LOOP;
  -- The records of the items that went through, in one statement: in key order over the whole batch, as one
  -- commit_with_records writes its own (no commit reads records, so writing them last changes no answer).
  PERFORM ${s}.write_records(array_agg(r.key ORDER BY r.j), array_agg(r.value ORDER BY r.j))
     FROM unnest(record_items, record_keys, record_values) WITH ORDINALITY r(item, key, value, j)
    WHERE r.item = ANY(landed);
  RETURN to_jsonb(answers);
END
$fn$;
`;
}

/**
 * Migration 5: the rate-limit decision over a batch of decisions (`consume_batch`), and `consume` as a batch of one, so
 * that the rule (room in every counter, a refusal writes nothing, a window started again once it ended) is written
 * once. Applies on top of version 3 or 4: it only replaces `consume` and adds a function.
 */
function version5(schema: string): string {
  const s = quoteIdentifier(schema);
  return `
-- Rate-limit decisions in one call, in order: decision d has the next sizes[d] entries of keys, limits and costs, and
-- its window's end expires_ms[d]. The union of the decisions' counters is locked once, in ascending id order, and read
-- once after the locks; then each decision is decided as consume decides one: admitted only if each of its counters'
-- count plus its cost is within its limit, then each cost > 0 is added (a counter is created, or started again once its
-- window has ended, with expires_ms[d] as its end); a refusal changes nothing. A later decision sees the counts the
-- earlier ones left. The counters written are written once, at the end. Returns, for each decision in order, 1 or 0
-- (allowed), then each of its counts after. Commits without waiting for the WAL flush, as consume since migration 2.
CREATE FUNCTION ${s}.consume_batch(keys text[], limits bigint[], costs bigint[], sizes integer[], expires_ms bigint[]) RETURNS bigint[]
LANGUAGE plpgsql AS $fn$
DECLARE
  lock_id bigint;
  clock timestamptz;
  names text[];        -- the batch's counters, each once
  counts bigint[];     -- each one's count (0 for no row or a window that ended)
  ends timestamptz[];  -- each one's window end, NULL for no live row
  started integer[];   -- the decision that last started each one's window
  touched integer[];   -- the last decision that added to each one, 0 for none
  at integer[];        -- for each entry of keys, its counter's place in names
  answer bigint[] := '{}';
  first integer := 1;
  d integer;
  j integer;
  p integer;
  admitted boolean;
BEGIN
  ${readCommittedOnly('consume_batch')}
  IF cardinality(limits) <> cardinality(keys) OR cardinality(costs) <> cardinality(keys) OR cardinality(expires_ms) <> cardinality(sizes) THEN
    RAISE EXCEPTION 'mcp-fleet: consume_batch takes as many limits and costs as keys, and as many window ends as sizes';
  END IF;
  -- The counters' locks are held for the call, not for a WAL flush (migration 2's reason).
  PERFORM set_config('synchronous_commit', 'off', true);
  FOR lock_id IN SELECT DISTINCT ${lockId(schema, 'counter', 'k')} AS id FROM unnest(keys) k ORDER BY id LOOP
    PERFORM pg_advisory_xact_lock(lock_id);
  END LOOP;
  -- Read after the locks: the window ends on the database's clock, whichever process asks.
  clock := clock_timestamp();
  SELECT array_agg(u.k ORDER BY u.k), array_agg(coalesce(c.count, 0) ORDER BY u.k), array_agg(c.expires_at ORDER BY u.k)
    INTO names, counts, ends
    FROM (SELECT DISTINCT k FROM unnest(keys) k) u
    LEFT JOIN ${s}.counters c ON c.key = u.k AND c.expires_at > clock;
  SELECT array_agg(array_position(names, t.k) ORDER BY t.i) INTO at FROM unnest(keys) WITH ORDINALITY t(k, i);
  started := array_fill(0, ARRAY[coalesce(cardinality(names), 0)]);
  touched := started;
  FOR d IN 1 .. coalesce(cardinality(sizes), 0) LOOP
    -- Room in every counter, each against its count before this decision.
    admitted := true;
    FOR j IN first .. first + sizes[d] - 1 LOOP
      p := at[j];
      IF (CASE WHEN ends[p] > clock THEN counts[p] ELSE 0 END) + costs[j] > limits[j] THEN
        admitted := false;
        EXIT;
      END IF;
    END LOOP;
    IF admitted THEN
      FOR j IN first .. first + sizes[d] - 1 LOOP
        p := at[j];
        CONTINUE WHEN costs[j] <= 0;
        -- A live window (or one this decision started: a counter named twice) adds; an ended one starts again.
        IF ends[p] > clock OR started[p] = d THEN
          counts[p] := counts[p] + costs[j];
        ELSE
          counts[p] := costs[j];
          ends[p] := to_timestamp(expires_ms[d] / 1000.0);
          started[p] := d;
        END IF;
        touched[p] := d;
      END LOOP;
    END IF;
    answer := answer || (CASE WHEN admitted THEN 1 ELSE 0 END)::bigint;
    FOR j IN first .. first + sizes[d] - 1 LOOP
      p := at[j];
      answer := answer || CASE WHEN admitted AND touched[p] = d THEN counts[p] WHEN ends[p] > clock THEN counts[p] ELSE 0 END;
    END LOOP;
    first := first + sizes[d];
  END LOOP;
  IF first - 1 <> coalesce(cardinality(keys), 0) THEN
    RAISE EXCEPTION 'mcp-fleet: consume_batch''s sizes add up to % counters, keys has %', first - 1, coalesce(cardinality(keys), 0);
  END IF;
  INSERT INTO ${s}.counters AS c (key, count, expires_at)
  SELECT names[i], counts[i], ends[i] FROM generate_subscripts(names, 1) i WHERE touched[i] > 0
  ON CONFLICT (key) DO UPDATE SET count = excluded.count, expires_at = excluded.expires_at;
  RETURN answer;
END
$fn$;

-- One rate-limit decision: a batch of one (consume_batch has the rule). Returns {1 or 0 (allowed), each count after}.
CREATE OR REPLACE FUNCTION ${s}.consume(keys text[], limits bigint[], costs bigint[], expires_ms bigint) RETURNS bigint[]
LANGUAGE sql AS $fn$
  SELECT ${s}.consume_batch(keys, limits, costs, ARRAY[coalesce(cardinality(keys), 0)], ARRAY[expires_ms]);
$fn$;
`;
}

/**
 * Migration 6: an index commit's checks and writes done for several commits at once, statement by statement over all
 * of them (`commit_items_locked`), instead of item after item. `commit_index_locked` becomes that function of one item
 * and `commit_batch` calls it once for its whole batch, so the rule is written once, as before.
 */
function version6(schema: string): string {
  const s = quoteIdentifier(schema);
  // Whether a set holds a member, `alias.set_name` and `alias.member`: one index lookup.
  const member = (alias: string) => `SELECT true AS there FROM ${s}.set_members WHERE set_name = ${alias}.set_name AND member = ${alias}.member LIMIT 1`;
  // The items `from` to `to`, each with its transaction: the source every statement below starts from.
  const round = (from: string, to: string) =>
    `SELECT t.i, t.e->'tx' AS tx, (t.e->>'claimed_at')::bigint AS claimed_at FROM jsonb_array_elements(items) WITH ORDINALITY t(e, i) WHERE t.i BETWEEN ${from} AND ${to}`;
  return `
-- The checks and writes of several index commits, for a caller holding every lock each of them takes (commit_index,
-- commit_batch): the answers, in order, exactly as checking and writing the commits one after another would give
-- them (commit_index's steps 2 to 4, each a later commit seeing the earlier ones' writes). items: [{"tx": …,
-- "claimed_at": Unix ms or null}, …]. Called without the locks it is not exact: nothing else may call it.
--
-- The commits go in rounds, each a run of consecutive commits of which no two touch the same claim key or the same
-- member of a set (the next commit that does starts the next round). In a round no commit's checks can depend on an
-- earlier one's writes but through the sizes of the sets they share, which the checks add up: a limit of commit i is
-- its set's size plus what the round's commits before i add to it and take from it. The round's first refused commit
-- (its first conflicting claim, else its first full limit, as commit_index answers) ends the commits that land: those
-- before it are written together, statement by statement, it writes nothing, and the next round starts after it.
-- A batch without conflicts is one round: four statements for creates (which release and remove nothing), whatever
-- its size.
CREATE FUNCTION ${s}.commit_items_locked(items jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $fn$
DECLARE
  total integer := jsonb_array_length(items);
  answers jsonb[] := '{}';
  first integer := 1;
  last integer;
  landed integer;
  refused integer;
  refusal jsonb;
  -- Whether any commit releases a claim or removes a member: the statements that would do nothing are not run.
  releasing boolean := jsonb_path_exists(items, '$[*].tx.releases[*]');
  removing boolean := jsonb_path_exists(items, '$[*].tx.remove[*]');
BEGIN
  WHILE first <= total LOOP
    -- The round: up to the commit before the first that touches a claim key or a set's member an earlier one touches.
    last := total;
    IF first < total THEN
      WITH touched AS MATERIALIZED (
        SELECT it.i, 'claim' AS kind, e->>'key' AS name, '' AS member FROM (${round('first', 'total')}) it, jsonb_array_elements(coalesce(it.tx->'claims', '[]') || coalesce(it.tx->'releases', '[]')) e
        UNION ALL
        SELECT it.i, 'member', e->>'set', e->>'member' FROM (${round('first', 'total')}) it, jsonb_array_elements(coalesce(it.tx->'add', '[]') || coalesce(it.tx->'remove', '[]')) e
      )
      SELECT coalesce(min(t.i) - 1, total) INTO last
        FROM touched t JOIN (SELECT kind, name, member, min(i) AS i FROM touched GROUP BY kind, name, member) earliest USING (kind, name, member)
       WHERE t.i > earliest.i;
    END IF;

    -- Its first refused commit, and why: a claim held by another owner (neither the claimant nor the one it replaces)
    -- comes before a full limit, each the first in the order given. Every row of the tables is looked up by its key
    -- (LATERAL … LIMIT 1, which the planner does not turn into a scan of the table, whatever its statistics say).
    WITH it AS MATERIALIZED (${round('first', 'last')}),
    claimed AS (
      SELECT it.i, c.j, c.e->>'key' AS key, c.e->>'owner' AS owner, c.e->>'replacing' AS replacing
        FROM it, jsonb_array_elements(coalesce(it.tx->'claims', '[]')) WITH ORDINALITY c(e, j)
    ),
    removed AS MATERIALIZED (
      SELECT DISTINCT it.i, e->>'set' AS set_name, e->>'member' AS member FROM it, jsonb_array_elements(coalesce(it.tx->'remove', '[]')) e
    ),
    added AS (
      SELECT DISTINCT it.i, e->>'set' AS set_name, e->>'member' AS member FROM it, jsonb_array_elements(coalesce(it.tx->'add', '[]')) e
    ),
    limited AS (
      SELECT it.i, l.j, l.e->>'set' AS set_name, (l.e->>'max')::numeric AS max
        FROM it, jsonb_array_elements(coalesce(it.tx->'limits', '[]')) WITH ORDINALITY l(e, j)
    ),
    -- What each commit changes its sets' sizes by: -1 for each member it removes that is there, +1 for each it adds
    -- that is not (or that it removes first).
    resized AS MATERIALIZED (
      SELECT r.i, r.set_name, -1 AS delta
        FROM removed r JOIN LATERAL (${member('r')}) m ON true
      UNION ALL
      SELECT a.i, a.set_name, 1
        FROM added a LEFT JOIN LATERAL (${member('a')}) m ON true
       WHERE m.there IS NULL OR EXISTS (SELECT 1 FROM removed r WHERE r.i = a.i AND r.set_name = a.set_name AND r.member = a.member)
    ),
    refusals AS (
      SELECT c.i, 0 AS step, c.j AS at, jsonb_build_object('ok', false, 'conflict', c.j, 'owner', held.owner, 'since', held.since) AS answer
        FROM claimed c JOIN LATERAL (SELECT owner, since FROM ${s}.claims WHERE key = c.key LIMIT 1) held ON true
       WHERE held.owner <> c.owner AND held.owner IS DISTINCT FROM c.replacing
      UNION ALL
      -- A limit counts its set's size and what the round's commits before this one change it by.
      SELECT l.i, 1, l.j, jsonb_build_object('ok', false, 'full', l.j)
        FROM limited l
        LEFT JOIN LATERAL (SELECT size FROM ${s}.sets WHERE name = l.set_name LIMIT 1) st ON true
        LEFT JOIN resized earlier ON earlier.set_name = l.set_name AND earlier.i < l.i
       GROUP BY l.i, l.j, l.max, st.size
      HAVING coalesce(st.size, 0) + coalesce(sum(earlier.delta), 0) >= l.max
    )
    SELECT i, answer INTO refused, refusal FROM refusals ORDER BY i, step, at LIMIT 1;
    landed := coalesce(refused - 1, last);

    -- The writes of the commits that land, as each would make them: releases, claims, removals, additions.
    IF landed >= first THEN
      IF releasing THEN
        DELETE FROM ${s}.claims c USING (${round('first', 'landed')}) it, jsonb_array_elements(coalesce(it.tx->'releases', '[]')) e
         WHERE c.key = e->>'key' AND c.owner = e->>'owner';
      END IF;

      -- A key claimed twice in a commit takes its last claim (no two commits of a round claim the same key).
      INSERT INTO ${s}.claims AS c (key, owner, since)
      SELECT DISTINCT ON (e->>'key') e->>'key', e->>'owner', coalesce(it.claimed_at, (extract(epoch FROM clock_timestamp()) * 1000)::bigint)
        FROM (${round('first', 'landed')}) it, jsonb_array_elements(coalesce(it.tx->'claims', '[]')) WITH ORDINALITY t(e, j)
       ORDER BY e->>'key', it.i DESC, j DESC
      ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, since = excluded.since WHERE c.owner <> excluded.owner;

      IF removing THEN
        WITH gone AS (
          DELETE FROM ${s}.set_members m
           USING (SELECT DISTINCT e->>'set' AS set_name, e->>'member' AS member FROM (${round('first', 'landed')}) it, jsonb_array_elements(coalesce(it.tx->'remove', '[]')) e) r
           WHERE m.set_name = r.set_name AND m.member = r.member
          RETURNING m.set_name
        )
        UPDATE ${s}.sets st SET size = st.size - g.n
          FROM (SELECT set_name, count(*) AS n FROM gone GROUP BY set_name) g
         WHERE st.name = g.set_name;
      END IF;

      -- A member added twice takes its last score; xmax = 0 tells a new member from a re-scored one.
      WITH added AS (
        INSERT INTO ${s}.set_members AS m (set_name, member, score)
        SELECT DISTINCT ON (e->>'set', e->>'member') e->>'set', e->>'member', (e->>'score')::double precision
          FROM (${round('first', 'landed')}) it, jsonb_array_elements(coalesce(it.tx->'add', '[]')) WITH ORDINALITY t(e, j)
         ORDER BY e->>'set', e->>'member', it.i DESC, j DESC
        ON CONFLICT (set_name, member) DO UPDATE SET score = excluded.score
        RETURNING m.set_name, (m.xmax = 0) AS fresh
      )
      INSERT INTO ${s}.sets AS st (name, size)
      SELECT set_name, count(*) FILTER (WHERE fresh) FROM added GROUP BY set_name
      ON CONFLICT (name) DO UPDATE SET size = st.size + excluded.size;

      answers := answers || array_fill('{"ok":true}'::jsonb, ARRAY[landed - first + 1]);
    END IF;
    IF refused IS NOT NULL THEN
      answers := answers || refusal;
      first := refused + 1;
    ELSE
      first := last + 1;
    END IF;
  END LOOP;
  RETURN to_jsonb(answers);
END
$fn$;

-- commit_index's checks and writes: commit_items_locked of one commit.
CREATE OR REPLACE FUNCTION ${s}.commit_index_locked(tx jsonb, claimed_at bigint) RETURNS jsonb
LANGUAGE sql AS $fn$
  SELECT ${s}.commit_items_locked(jsonb_build_array(jsonb_build_object('tx', tx, 'claimed_at', claimed_at)))->0;
$fn$;

-- commit_batch as before (its locks, the items' answers, the records of those that went through), its items checked
-- and written by one call of commit_items_locked.
CREATE OR REPLACE FUNCTION ${s}.commit_batch(items jsonb, record_items integer[], record_keys text[], record_values text[]) RETURNS jsonb
LANGUAGE plpgsql AS $fn$
DECLARE
  lock_id bigint;
  answers jsonb;
BEGIN
  ${readCommittedOnly('commit_batch')}
  FOR lock_id IN SELECT DISTINCT id FROM jsonb_array_elements(items) t(e), ${s}.commit_lock_ids(t.e->'tx') id ORDER BY id LOOP
    PERFORM pg_advisory_xact_lock(lock_id);
  END LOOP;
  answers := ${s}.commit_items_locked(items);
  -- The records of the items that went through, in one statement, in key order over the whole batch.
  PERFORM ${s}.write_records(array_agg(r.key ORDER BY r.j), array_agg(r.value ORDER BY r.j))
     FROM unnest(record_items, record_keys, record_values) WITH ORDINALITY r(item, key, value, j)
    WHERE (answers->(r.item - 1)->>'ok')::boolean;
  RETURN answers;
END
$fn$;
`;
}

/** Every migration, oldest first, for `schema`. The table `migrations` itself is made by `migrate()`. */
export function migrations(schema: string): Migration[] {
  checkSchemaName(schema);
  return [
    { version: 1, name: 'records, claims, ordered sets, counters; commit_index, consume, sweep', sql: version1(schema) },
    { version: 2, name: 'consume commits without waiting for the WAL flush', sql: `\n${consumeFunction(schema, 'CREATE OR REPLACE', true)}\n` },
    { version: 3, name: 'commit_with_records: an index commit and its records in one call', sql: version3(schema) },
    { version: 4, name: 'commit_batch: several commits with records in one transaction (group commit)', sql: version4(schema) },
    { version: 5, name: 'consume_batch: rate-limit decisions in one call; consume is a batch of one', sql: version5(schema) },
    { version: 6, name: 'commit_items_locked: the checks and writes of several index commits, statement by statement over all of them', sql: version6(schema) },
  ];
}

/** The version this code brings the schema to. */
export const SCHEMA_VERSION = 6;

/**
 * The SQL `migrate()` runs on an empty schema, for a DBA to read or to run by hand (then open the store with
 * `migrate: false`). `migrate()` runs it in one transaction under an advisory lock and records each version.
 */
export function migrationSql(schema = 'mcp_fleet'): string {
  const s = quoteIdentifier(checkSchemaName(schema));
  const parts = [
    `CREATE SCHEMA IF NOT EXISTS ${s};`,
    `CREATE TABLE IF NOT EXISTS ${s}.migrations (\n  version    integer PRIMARY KEY,\n  name       text NOT NULL,\n  applied_at timestamptz NOT NULL DEFAULT now()\n);`,
  ];
  for (const m of migrations(schema)) {
    parts.push(`-- Migration ${m.version}: ${m.name}${m.sql}`, `INSERT INTO ${s}.migrations (version, name) VALUES (${m.version}, ${quoteLiteral(m.name)});`);
  }
  return `${parts.join('\n\n')}\n`;
}

/** The advisory lock `migrate()` holds: one per schema, apart from the index's and the counters' lock ids. */
export function migrationLockSql(schema: string): string {
  return `SELECT pg_advisory_xact_lock(hashtextextended(${quoteLiteral(`${schema}:migrate`)}, 0))`;
}

export { quoteLiteral };
