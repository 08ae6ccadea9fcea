import { okAsync, ResultAsync } from 'neverthrow';
import type { FleetError } from '../errors/fleet-error.js';
import type { IndexCalls } from '../storage/index-calls.js';
import type { IndexTransaction } from '../storage/index-store.js';
import type { RecordStore } from '../storage/records.js';
import { randomToken } from '../util/ids.js';
import { type DeliveryLog, type DeliveryRecord, DUE_SET, dueMember, parseDueMember } from './deliveries.js';
import { type EventOutbox, type EventRecord, eventKey } from '../events/outbox.js';
import { parseRetryAfter, retryDelay, type RetryPolicy } from './retry.js';
import type { Sender, SendOutcome } from './sender.js';
import { sign } from './signature.js';
import type { WebhookStore } from './subscriptions.js';
import { okWith, type Ran, chainMap, toAsync } from '../util/result.js';
import { webhookDeliveryChannel } from '../trace/channels.js';
import { publishDelivery } from '../trace/publish.js';

export interface WorkerDeps {
  records: RecordStore;
  index: IndexCalls;
  webhooks: WebhookStore;
  deliveries: DeliveryLog;
  outbox: EventOutbox;
  send: Sender;
  retry: RetryPolicy;
  timeoutMs: number;
  leaseMs: number;
  pollIntervalMs: number;
  concurrency: number;
  now: () => number;
  onError: (cause: unknown) => void;
}

const leaseKey = (id: string) => `webhook-lease:${id}`;

/** The JSON body of a delivery: the same bytes on every attempt. */
export function payloadOf(event: EventRecord): string {
  return JSON.stringify({ id: event.id, type: event.type, created_at: event.created_at, data: event.data });
}

/** How long `stop()` waits for the attempts in flight (at most `timeoutMs`) before it abandons them. */
const STOP_GRACE_MS = 1000;

/**
 * Sends due deliveries. Each attempt is made under a lease (a claim in the IndexStore), so with several processes on
 * one storage each attempt is made by one of them; a lease older than `leaseMs` (its holder died) is taken over.
 * After taking the lease the delivery record is read again: an attempt someone else already made is never repeated.
 */
export class DeliveryWorker {
  readonly id = `wkr_${randomToken(16)}`;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private stopped = true;
  /** `stop()` was called: no attempt is started any more. */
  private draining = false;
  private readonly aborter = new AbortController();
  /** Lanes: the attempts in flight in this process, by due member, with the account each is for. */
  private readonly inFlight = new Map<string, string>();
  private readonly lanesOf = new Map<string, number>();
  private readonly running = new Set<Promise<void>>();
  /** At most this many lanes go to one account, so that its dead receivers cannot hold up everyone else's. */
  private readonly accountLanes: number;
  /** Members whose lease another process holds: left to it until the next poll. */
  private readonly heldElsewhere = new Set<string>();
  private filling: Promise<number> | undefined;
  private refill = false;
  /**
   * Due deliveries read but not started yet, oldest first, with their accounts: a freed lane takes the next one it
   * may from here, and the due listing is read again only once none is left for it (or something was published).
   */
  private queue: { member: string; account: string }[] = [];
  private queueStale = true;

  constructor(private readonly deps: WorkerDeps) {
    this.accountLanes = Math.max(1, Math.floor(deps.concurrency / 2));
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  /**
   * Stops polling and starting attempts, gives the attempts in flight up to `STOP_GRACE_MS` to end and be recorded,
   * then abandons the rest: their deliveries stay due, and are sent again by whichever process takes their lease once
   * it lapses. Without the grace, a receiver that had just answered would see an attempt abandoned between its answer
   * and the record of it, and be sent the delivery a second time.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.draining = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.polling;
    let grace: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all([...this.running]), new Promise((resolve) => (grace = setTimeout(resolve, Math.min(STOP_GRACE_MS, this.deps.timeoutMs))))]);
    clearTimeout(grace);
    this.aborter.abort();
    await Promise.all([...this.running]);
  }

  /** Looks for due deliveries now (something was just published). */
  wake(): void {
    if (this.stopped) return;
    this.queueStale = true;
    void this.fill();
  }

  /**
   * Recovery of old intents, then every delivery due now; resolves once all it started are done (for tests, and for
   * a caller that wants the outbox drained). The worker itself never waits on a round: see `fill`.
   */
  async tick(): Promise<void> {
    await this.poll();
    while (this.running.size > 0 && !this.draining) {
      await Promise.all([...this.running]);
      await this.fill();
    }
  }

  private async poll(): Promise<void> {
    const recovered = await this.deps.outbox.recover();
    if (recovered.isErr()) this.deps.onError(recovered.error);
    this.heldElsewhere.clear();
    this.queueStale = true;
    await this.fill();
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.polling = this.poll()
        .catch((error: unknown) => this.deps.onError(error))
        .finally(() => {
          this.polling = undefined;
          this.schedule(this.deps.pollIntervalMs);
        });
    }, ms);
    this.timer.unref?.();
  }

  /**
   * Starts due deliveries on free lanes, oldest due first, but never more than half the lanes for one account: an
   * attempt starts as soon as a lane is free (a finished attempt fills its lane again), so no delivery waits for a
   * round of slow receivers to end. One fill at a time; a fill asked for meanwhile runs right after. Resolves to how
   * many attempts it started.
   */
  private fill(): Promise<number> {
    if (this.filling !== undefined) {
      this.refill = true;
      return this.filling;
    }
    this.filling = this.fillLanes()
      .catch((error: unknown) => {
        this.deps.onError(error);
        return 0;
      })
      .finally(() => {
        this.filling = undefined;
        if (this.refill && !this.draining) {
          this.refill = false;
          void this.fill();
        }
      });
    return this.filling;
  }

  private async fillLanes(): Promise<number> {
    if (this.free() <= 0 || this.draining) return 0;
    let started = this.startQueued();
    if (this.free() > 0 && (this.queueStale || this.queue.length === 0)) {
      const read = await this.readDue();
      if (read) started += this.startQueued();
    }
    return started;
  }

  private free(): number {
    return this.deps.concurrency - this.inFlight.size;
  }

  /** Starts queued deliveries on the free lanes, oldest first, skipping accounts that hold their share of lanes. */
  private startQueued(): number {
    let started = 0;
    for (let i = 0; i < this.queue.length && this.free() > 0 && !this.draining; ) {
      const { member, account } = this.queue[i] as { member: string; account: string };
      if ((this.lanesOf.get(account) ?? 0) >= this.accountLanes) {
        i += 1;
        continue;
      }
      this.queue.splice(i, 1);
      this.begin(member, account);
      started += 1;
    }
    return started;
  }

  /** Reads the due listing into the queue. False when it could not be read. */
  private async readDue(): Promise<boolean> {
    this.queueStale = false;
    // A window wider than the lanes: members leased by other processes (slow receivers) must not hide the rest.
    const members = await this.deps.index.range(DUE_SET, { offset: 0, limit: this.deps.concurrency * 16 });
    if (members.isErr()) {
      this.deps.onError(members.error);
      return false;
    }
    const now = this.deps.now();
    const known = new Set(this.queue.map((entry) => entry.member));
    const due = members.value.filter(
      (m) => (parseDueMember(m)?.dueMs ?? 0) <= now && !this.inFlight.has(m) && !this.heldElsewhere.has(m) && !known.has(m),
    );
    if (due.length === 0) return true;
    // Whose each delivery is, to share the lanes between accounts (a member that names no delivery is dropped by
    // its attempt, on no account's lanes).
    const found = await this.deps.deliveries.getMany(due.map((m) => parseDueMember(m)?.id ?? ''));
    if (found.isErr()) {
      this.deps.onError(found.error);
      return false;
    }
    due.forEach((member, i) => this.queue.push({ member, account: found.value[i]?.account ?? '' }));
    return true;
  }

  private begin(member: string, account: string): void {
    this.inFlight.set(member, account);
    this.lanesOf.set(account, (this.lanesOf.get(account) ?? 0) + 1);
    const run: Promise<void> = this.attempt(member)
      .match(
        (handled) => {
          if (!handled) this.heldElsewhere.add(member);
        },
        (error) => this.deps.onError(error),
      )
      .finally(() => {
        this.inFlight.delete(member);
        const lanes = (this.lanesOf.get(account) ?? 1) - 1;
        if (lanes === 0) this.lanesOf.delete(account);
        else this.lanesOf.set(account, lanes);
        this.running.delete(run);
        if (!this.draining) void this.fill();
      });
    this.running.add(run);
  }

  /** Makes the attempt `member` stands for, if this process gets its lease. True when it handled the member. */
  private attempt(member: string): ResultAsync<boolean, FleetError> {
    const parsed = parseDueMember(member);
    const { index } = this.deps;
    if (parsed === undefined) return toAsync(index.commit({ remove: [{ set: DUE_SET, member }] })).andThen(okWith(() => true));
    const lease = leaseKey(parsed.id);
    // One owner per attempt, not per process: two rounds of this worker never share a lease either.
    const owner = `${this.id}:${randomToken(8)}`;
    return this.lease(lease, owner).andThen((held) => {
      if (!held) return okAsync(false);
      const release = { releases: [{ key: lease, owner }] };
      const drop = () => toAsync(index.commit({ ...release, remove: [{ set: DUE_SET, member }] })).andThen(okWith(() => true));
      return this.deps.deliveries.get(parsed.id).andThen((delivery) => {
        // Already attempted (by this member's time) or settled: the member is stale.
        if (delivery === undefined || delivery.status !== 'pending' || Date.parse(delivery.next_attempt_at ?? '') !== parsed.dueMs) return drop();
        return ResultAsync.combine([this.deps.webhooks.find(delivery.webhook_id), toAsync(this.deps.records.get<EventRecord>(eventKey(delivery.event_id)))] as const).andThen(
          ([webhook, event]) => {
            // The webhook was deleted or turned off (or the event outlived its retention): nothing to send.
            if (webhook === undefined || !webhook.enabled || event === undefined) {
              return this.settle(member, { ...delivery, status: 'cancelled', next_attempt_at: null }, release).andThen(okWith(() => true));
            }
            // The secret is opened here only, to sign; it never leaves this attempt.
            return this.deps.webhooks.secretOf(webhook).andThen((secret) => {
              const body = payloadOf(event);
              const timestamp = Math.floor(this.deps.now() / 1000);
              const headers = {
                'content-type': 'application/json',
                'user-agent': 'mcp-fleet-webhooks',
                'x-service-event': event.type,
                'x-service-delivery': delivery.id,
                ...sign(secret, body, { id: delivery.id, timestamp }),
              };
              const at = new Date(this.deps.now()).toISOString();
              return ResultAsync.fromSafePromise(
                this.deps.send({ url: webhook.url, headers, body, timeoutMs: this.deps.timeoutMs, signal: this.aborter.signal }).then(
                  (outcome): SendOutcome | undefined => outcome,
                  () => undefined,
                ),
              ).andThen((outcome) => {
                // Aborted by stop(): nothing is recorded, the lease lapses, the delivery stays due.
                if (outcome === undefined) return okAsync(true);
                if (webhookDeliveryChannel.hasSubscribers) publishDelivery(delivery, outcome);
                const next = this.afterAttempt(delivery, at, outcome);
                const gone = outcome.statusCode === 410;
                return this.settle(member, next, release)
                  .andThen(() => (gone ? this.deps.webhooks.disable(webhook.id, 'gone') : okAsync(undefined)))
                  .andThen(okWith(() => true));
              });
            });
          },
        );
      });
    });
  }

  private afterAttempt(delivery: DeliveryRecord, at: string, outcome: SendOutcome): DeliveryRecord {
    const number = delivery.attempts.length + 1;
    const attempts = [
      ...delivery.attempts,
      { attempt: number, at, status_code: outcome.statusCode, duration_ms: outcome.durationMs, error: outcome.error },
    ];
    if (outcome.error === null) return { ...delivery, attempts, status: 'delivered', next_attempt_at: null };
    if (outcome.statusCode === 410 || number >= this.deps.retry.attempts) return { ...delivery, attempts, status: 'failed', next_attempt_at: null };
    const now = this.deps.now();
    const delay =
      parseRetryAfter(outcome.retryAfter, now, this.deps.retry.maxDelayMs) ?? retryDelay(this.deps.retry, number);
    return { ...delivery, attempts, next_attempt_at: new Date(now + delay).toISOString() };
  }

  /** Writes the delivery, then moves its due member (or removes it once settled) and releases the lease, at once. */
  private settle(member: string, next: DeliveryRecord, release: IndexTransaction): ResultAsync<void, FleetError> {
    const add =
      next.status === 'pending' && next.next_attempt_at !== null
        ? [{ set: DUE_SET, member: dueMember(Date.parse(next.next_attempt_at), next.id), score: Date.parse(next.next_attempt_at) }]
        : [];
    return toAsync(this.deps.deliveries.save(next))
      .andThen(() => this.deps.index.commit({ ...release, remove: [{ set: DUE_SET, member }], add }))
      .andThen(okWith(() => undefined));
  }

  /** Takes the lease, or takes it over from a holder that has kept it longer than `leaseMs`. */
  private lease(key: string, owner: string): ResultAsync<boolean, FleetError> {
    const { index } = this.deps;
    return toAsync(index.commit({ claims: [{ key, owner }] })).andThen((result) => {
      if (result.ok) return okAsync(true);
      if (result.conflict === undefined || result.conflict.since > this.deps.now() - this.deps.leaseMs) return okAsync(false);
      return chainMap(index.commit({ claims: [{ key, owner, replacing: result.conflict.owner }] }), (retry) => retry.ok);
    });
  }
}
