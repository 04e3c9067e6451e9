/**
 * Part size P: every S3 multipart part but the last covers exactly this many bytes, and no request
 * carries more. The client's parts default to it; the gateway refuses a larger body from its head.
 */
export const PART_SIZE = 64 * 1024 * 1024;

/** The largest content accepted: 30 GiB. */
export const MAX_CONTENT_SIZE = 30 * 1024 * 1024 * 1024;
