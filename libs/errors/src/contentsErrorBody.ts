/** The error body of the /v1 API (kebab-case keys). */
export interface ContentsErrorBody {
  id: string;
  'status-code': number;
  message: string;
  'track-id': string;
}

export function contentsErrorBody(status: number, code: string, message: string, trackId: string): ContentsErrorBody {
  return { id: `urn:error:contents:${code}`, 'status-code': status, message, 'track-id': trackId };
}
