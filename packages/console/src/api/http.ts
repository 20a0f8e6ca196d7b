/**
 * The console's own refusal before any call: signed out (no access token to send). The service's
 * refusals are `@tessera/admin`'s TesseraAdminError, with the same `status`, `code` and `detail`.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
  ) {
    super(detail || code);
    this.name = 'ApiError';
  }
}
