/** Where a content's bytes live in S3: the finished object, and its staged pieces while it uploads. */

/** The S3 key of a content's object (the multipart upload's, or the one PutObject's). */
export function contentKey(ownerId: string, id: string): string {
  return `contents/${ownerId}/${id}`;
}

/** The folder of a content's staged pieces: deleted as a whole at completion or expiry. */
export function stagingPrefix(contentId: string): string {
  return `staging/${contentId}/`;
}

/** The S3 key of a staged piece. */
export function stagedKey(contentId: string, a: number, b: number, nonce: string): string {
  return `${stagingPrefix(contentId)}${a}-${b}.${nonce}`;
}
