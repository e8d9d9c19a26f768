// Errors of the service, typed by the envelope's code (the ErrorCode enum of api/openapi.yaml).

/** Every code an error envelope may carry (api/openapi.yaml, ErrorCode; room-only codes left out). */
export const ErrorCodes = {
  /** 400: the request is malformed; `issues` names each problem. */
  Validation: 'VALIDATION',
  /** 401 of the credentials: a missing, wrong or expired key, token or session. */
  Unauthorized: 'UNAUTHORIZED',
  /** 403: the credentials are valid but may not do this. */
  Forbidden: 'FORBIDDEN',
  /** 404: no such resource for these credentials, or no such route. */
  NotFound: 'NOT_FOUND',
  MethodNotAllowed: 'METHOD_NOT_ALLOWED',
  RequestTimeout: 'REQUEST_TIMEOUT',
  /** 409: the resource's state refuses the request. */
  Conflict: 'CONFLICT',
  /** 410: every call made with a revoked integration's keys. */
  IntegrationRevoked: 'INTEGRATION_REVOKED',
  PreconditionFailed: 'PRECONDITION_FAILED',
  /** 413 of a body over its size limit (a storage cap is StorageQuotaExceeded). */
  PayloadTooLarge: 'PAYLOAD_TOO_LARGE',
  RangeNotSatisfiable: 'RANGE_NOT_SATISFIABLE',
  Unprocessable: 'UNPROCESSABLE',
  UpgradeRequired: 'UPGRADE_REQUIRED',
  /** 429 of a rate limit: nothing was done; the client retries it after Retry-After on its own. */
  RateLimited: 'RATE_LIMITED',
  HeadersTooLarge: 'HEADERS_TOO_LARGE',
  ClientError: 'CLIENT_ERROR',
  /** 500 (and another 5xx): a failure of the service; retried. */
  Internal: 'INTERNAL',
  /** 502 or 503: nothing changed; retried. */
  Unavailable: 'UNAVAILABLE',
  /** 504: the request may have taken effect; retried with the call's Idempotency-Key. */
  OutcomeUnknown: 'OUTCOME_UNKNOWN',
  /** No customer of this external user id: provision it with putCustomer (401 on uploads, 403 on a scoped mint, 404 elsewhere). */
  CustomerNotProvisioned: 'CUSTOMER_NOT_PROVISIONED',
  /** The customer is inactive, suspended or being deleted. */
  CustomerInactive: 'CUSTOMER_INACTIVE',
  /** 403 of a plan or scene-cap check: see SplathostError.planLimit. */
  PlanLimit: 'plan_limit',
  AuthRequired: 'AUTH_REQUIRED',
  /** 413 of a storage cap: see SplathostError.storage. */
  StorageQuotaExceeded: 'STORAGE_QUOTA_EXCEEDED',
  SourceFilesMissing: 'SOURCE_FILES_MISSING',
  /** 429 of a second clone: see SplathostError.cloneInProgress. */
  CloneInProgress: 'CLONE_IN_PROGRESS',
  CloneAbandoned: 'CLONE_ABANDONED',
  /** 409 of a key whose first request still runs; waited out like a 5xx. */
  IdempotencyKeyInUse: 'IDEMPOTENCY_KEY_IN_USE',
  /** 422 of a key sent again with another body. */
  IdempotencyKeyReused: 'IDEMPOTENCY_KEY_REUSED',
  NonCanonicalPath: 'NON_CANONICAL_PATH',
  /** 429 of an upload request while the open uploads are at their bound; not retried on its own. */
  TooManyOpenUploads: 'TOO_MANY_OPEN_UPLOADS',
} as const;

/** A code of {@link ErrorCodes}, or another string a newer service may answer. */
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes] | (string & {});

/** The figures of a 413 STORAGE_QUOTA_EXCEEDED (scope "customer": raise limitBytes with putCustomer). */
export interface StorageQuotaDetails {
  scope: 'customer' | 'account';
  usedBytes: number;
  limitBytes: number;
  remainingBytes: number;
  requestedBytes: number;
}

/** The fields of a 403 plan_limit; `limit` is null for a dimension the plan lacks (cloning). */
export interface PlanLimitDetails {
  dimension: string;
  limit: number | null;
  current: number | null;
  upgradeUrl: string;
  scope: string;
}

/** The clone job already running for the customer (429 CLONE_IN_PROGRESS). */
export interface CloneInProgressDetails {
  jobId: string;
  sourceSplatId: string;
}

/**
 * A non-2xx answer: the spec's error envelope plus the HTTP status. A refusal of the object store
 * (a signed-URL PUT) is one too, with an empty `code` and the store's XML as `body`.
 */
export class SplathostError extends Error {
  /** The HTTP status. */
  readonly status: number;
  /** The envelope's machine-readable code; '' for an answer that is no envelope (a store, a proxy). */
  readonly code: ErrorCode;
  /** The validation problems of a 400 (empty otherwise). */
  readonly issues: string[];
  /** The answer's X-Request-Id, for support requests. */
  readonly requestId: string;
  /** The parsed envelope, or the raw text when it was not JSON. */
  readonly body: unknown;
  /** Set for STORAGE_QUOTA_EXCEEDED. */
  readonly storage?: StorageQuotaDetails;
  /** Set for plan_limit. */
  readonly planLimit?: PlanLimitDetails;
  /** Set for CLONE_IN_PROGRESS. */
  readonly cloneInProgress?: CloneInProgressDetails;

  constructor(status: number, message: string, init: { code?: string; issues?: string[]; requestId?: string; body?: unknown } = {}) {
    super(message);
    this.name = 'SplathostError';
    this.status = status;
    this.code = init.code ?? '';
    this.issues = init.issues ?? [];
    this.requestId = init.requestId ?? '';
    this.body = init.body;
    const env = (typeof init.body === 'object' && init.body !== null ? init.body : {}) as Record<string, unknown>;
    if (this.code === ErrorCodes.StorageQuotaExceeded) this.storage = env as unknown as StorageQuotaDetails;
    if (this.code === ErrorCodes.PlanLimit) this.planLimit = env as unknown as PlanLimitDetails;
    if (this.code === ErrorCodes.CloneInProgress) this.cloneInProgress = env as unknown as CloneInProgressDetails;
  }

  /** Builds the error of an answer's status, headers and body text. */
  static fromAnswer(status: number, headers: { get(name: string): string | null }, text: string): SplathostError {
    type Envelope = { message?: unknown; code?: unknown; issues?: unknown };
    let env: Envelope | null = null;
    try {
      const parsed: unknown = text ? JSON.parse(text) : null;
      if (typeof parsed === 'object' && parsed !== null) env = parsed as Envelope;
    } catch { /* a proxy's HTML page: the status alone */ }
    const message = typeof env?.message === 'string' && env.message !== '' ? env.message : `HTTP ${status}`;
    const issues = Array.isArray(env?.issues) ? (env.issues as unknown[]).filter((i): i is string => typeof i === 'string') : [];
    return new SplathostError(status, message, {
      code: typeof env?.code === 'string' ? env.code : '', issues, requestId: headers.get('X-Request-Id') ?? '', body: env ?? text,
    });
  }

  /** The message with status, code and issues, as the Go SDK prints it. */
  override toString(): string {
    let s = `splathost: ${this.status}`;
    if (this.code) s += ` ${this.code}`;
    s += `: ${this.message}`;
    if (this.issues.length > 0) s += ` (${this.issues.join('; ')})`;
    return s;
  }
}

/** True when err is an answer of the service with the given code, e.g. isCode(err, ErrorCodes.CustomerNotProvisioned). */
export function isCode(err: unknown, code: ErrorCode): err is SplathostError {
  return err instanceof SplathostError && err.code === code;
}

/** The code of err's answer, or '' when err is no answer (a network error, an abort). */
export function codeOf(err: unknown): string {
  return err instanceof SplathostError ? err.code : '';
}

/** Any 404: no such resource, or (CUSTOMER_NOT_PROVISIONED) no such customer on a route that answers 404 for it. */
export function isNotFound(err: unknown): err is SplathostError {
  return err instanceof SplathostError && err.status === 404;
}

/**
 * A 401 of the credentials only (code UNAUTHORIZED, or none from a proxy). A 401 about the
 * customer (CUSTOMER_NOT_PROVISIONED, CUSTOMER_INACTIVE on the upload routes) is not: the key was right.
 */
export function isUnauthorized(err: unknown): err is SplathostError {
  return err instanceof SplathostError && err.status === 401 && (err.code === ErrorCodes.Unauthorized || err.code === '');
}

/** The integration has no customer of the external user id the call named: provision it with putCustomer. */
export function isCustomerNotProvisioned(err: unknown): err is SplathostError {
  return isCode(err, ErrorCodes.CustomerNotProvisioned);
}

/** The 410 of a call made with a revoked integration's keys. */
export function isRevoked(err: unknown): err is SplathostError {
  return isCode(err, ErrorCodes.IntegrationRevoked);
}

/** A 429 RATE_LIMITED that outlasted the retries. */
export function isRateLimited(err: unknown): err is SplathostError {
  return isCode(err, ErrorCodes.RateLimited);
}

/** A 400 VALIDATION; `issues` names each problem. */
export function isValidation(err: unknown): err is SplathostError {
  return isCode(err, ErrorCodes.Validation);
}
