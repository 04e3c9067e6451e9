import { ownerGroup } from './keys';
import type { WebhookStore } from './WebhookStore';

/**
 * Which owners may have webhooks, known in memory: the owner groups that hold any (a fixed number
 * of groups, so its size is bounded whatever the number of owners). A write of an owner whose
 * group holds none makes no Redis call for its event. Refreshed by the dispatcher every poll, and
 * at once here when this replica creates a webhook: a webhook created on another replica is seen
 * here at most one poll interval later (facts in that window raise no event for it). Until its
 * first refresh it knows nothing and every owner may have webhooks.
 */
export class SubscriberIndex {
  private groups: Set<string> | null = null;

  constructor(private readonly store: Pick<WebhookStore, 'groupsInUse'>) {}

  mayHaveWebhooks(ownerId: string): boolean {
    return this.groups === null || this.groups.has(ownerGroup(ownerId));
  }

  /** Whether it has been read from Redis at least once. */
  get known(): boolean {
    return this.groups !== null;
  }

  async refresh(): Promise<void> {
    this.groups = await this.store.groupsInUse();
  }

  noteCreated(ownerId: string): void {
    this.groups?.add(ownerGroup(ownerId));
  }
}
