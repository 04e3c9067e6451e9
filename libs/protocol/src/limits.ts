/**
 * Part size P: every S3 multipart part but the last covers exactly this many bytes, and no request
 * carries more. The client's parts default to it; the gateway refuses a larger body from its head.
 */
export const PART_SIZE = 64 * 1024 * 1024;

/** The largest content accepted: 30 GiB. */
export const MAX_CONTENT_SIZE = 30 * 1024 * 1024 * 1024;

/**
 * The most ranges one 64 MiB part of a content may be received in (16 KiB on average): each is
 * kept until its part is assembled, so a part sent in ever smaller ranges cannot grow its
 * bookkeeping without bound. A range past it is refused (409 `partTooFragmented`).
 */
export const MAX_RANGES_PER_PART = 4096;
