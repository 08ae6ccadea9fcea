import type { ToolCallLog } from './tool-call-log.js';

export interface ToolCallExpiryOptions {
  /** How often the sweep runs, in ms. */
  intervalMs: number;
  /** Calls removed per batch: one index commit and one record delete each. */
  batch: number;
  /** Batches per sweep at most; what is left waits for the next sweep. */
  maxBatches: number;
  onError: (cause: unknown) => void;
}

/**
 * Removes expired tool calls in the background: every `intervalMs`, batches of the oldest due calls, one after
 * another (each awaits its storage calls, so requests run between them) and at most `maxBatches`, so one sweep's work
 * is bounded however large a backlog a lowered retention leaves. Every process may sweep: removals are idempotent.
 */
export class ToolCallExpiry {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly log: ToolCallLog,
    private readonly options: ToolCallExpiryOptions,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.sweep(), this.options.intervalMs);
    this.timer.unref();
  }

  /** One sweep now (unless one is under way): resolves when it ends. Never rejects; failures go to `onError`. */
  sweep(): Promise<void> {
    this.running ??= this.run().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
  }

  private async run(): Promise<void> {
    const { batch, maxBatches, onError } = this.options;
    for (let i = 0; i < maxBatches && !this.stopped; i++) {
      const removed = await this.log.sweep(batch);
      if (removed.isErr()) return onError(removed.error);
      if (removed.value < batch) return;
    }
  }
}
