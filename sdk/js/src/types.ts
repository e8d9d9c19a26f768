// The API's request and answer shapes (api/openapi.yaml), as the client reads and sends them.

/** Who may see a scene. */
export type Visibility = 'private' | 'public';

/** A storage meter: the account's after a commit or clone, the customer's in usage. */
export interface Usage {
  usedBytes: number;
  limitBytes: number;
  remainingBytes: number;
  percentUsed: number;
}

/** A customer (external user) of the integration. */
export interface ExternalUser {
  id: string;
  integrationId: string;
  externalUserId: string;
  productSlug: string;
  displayName: string | null;
  avatarUrl: string | null;
  emailHash: string | null;
  metadata: Record<string, unknown> | null;
  status: string;
  billingState: string;
  usedBytes: number;
  limitBytes: number;
  maxSplats: number | null;
  remainingBytes: number;
  percentUsed: number;
  deletedAt: string | null;
  createdAt: string | null;
  updatedAt: string | null;
}

/** The body of putCustomer: absent fields are left as they are; `maxSplats: null` removes the cap. */
export interface CustomerUpdate {
  limitBytes?: number;
  maxSplats?: number | null;
  status?: 'active' | 'inactive' | 'suspended';
  billingState?: string;
  keepSplatIds?: string[];
  protectedSplatIds?: string[];
  displayName?: string | null;
  avatarUrl?: string | null;
  emailHash?: string | null;
  metadata?: Record<string, unknown> | null;
}

/** The answer of deleteCustomer. */
export interface DeleteCustomerResult {
  deletedSplatCount: number;
  externalUser: { id: string; externalUserId: string; status: string; billingState: string; usedBytes: number; deletedAt: string | null } | null;
}

/** A customer's allocation and what it uses. */
export interface CustomerUsage {
  storage: Usage;
  splats: { used: number; limit: number | null };
  openUploads: { count: number; bytes: number; maxCount: number; maxBytes: number };
}

/** A scene's derived rendition, as a scene reports it. */
export interface Processing {
  state: 'pending' | 'ready' | 'failed' | 'skipped';
  renditionUrl: string | null;
  renditionType: string | null;
  renditionBytes: number | null;
  gaussians: number | null;
  message: string | null;
}

/** A scene. */
export interface Splat {
  id: string;
  title: string;
  description: string;
  imageUrl: string;
  splatUrl: string;
  visibility: Visibility;
  allowEmbed: boolean;
  allowComments: boolean;
  allowReactions: boolean;
  allowClone: boolean;
  remixedFrom: { splatId: string; ownerName: string; clonedAt: string } | null;
  splatType: 'file' | 'lod';
  externalUserId: string;
  productSlug: string;
  isOwner: boolean;
  viewCount: number;
  likeCount: number;
  fileSizeBytes: number;
  featured: boolean;
  featuredAt: string | null;
  createdAt: string;
  updatedAt: string;
  processing: Processing;
  levelData?: Record<string, unknown>;
  lodFolderKey?: string | null;
}

/** Options of listSplats and allSplats. */
export interface ListSplatsOptions {
  /** Limits the list to that customer's scenes. */
  externalUserId?: string;
  /** Page size, 1-100 (default 20). */
  limit?: number;
  /** The nextCursor of the previous page. */
  cursor?: string;
  featured?: boolean;
  sort?: 'createdAt' | 'updatedAt' | 'featuredAt' | 'viewCount';
  dir?: 'asc' | 'desc';
}

/** One page of listSplats; nextCursor is empty (or absent) on the last page. */
export interface SplatPage {
  splats: Splat[];
  nextCursor?: string | null;
}

/** The fields patchSplat may change; absent ones are left as they are. */
export interface SplatPatch {
  title?: string;
  description?: string;
  visibility?: Visibility;
  featured?: boolean;
  allowEmbed?: boolean;
  allowComments?: boolean;
  allowReactions?: boolean;
  allowClone?: boolean;
  [field: string]: unknown;
}

/** The body of commitSplat. */
export interface CommitRequest {
  title: string;
  description?: string;
  visibility?: Visibility;
  splatType?: 'file' | 'lod';
  /** The fileUrl of a file upload or the manifestUrl of a LOD folder. */
  splatUrl: string;
  lodFolderKey?: string;
  imageUrl?: string;
  thumbnailDepthUrl?: string;
  initialCameraPosition?: [number, number, number];
  initialCameraRotation?: [number, number, number];
}

/** The answer of commitSplat. */
export interface CommitResult {
  splatId: string;
  splat: Splat;
  usage: Usage;
}

/** Options of trendingSplats: window 1-90 days (default 7), limit 1-100 (default 12). */
export interface TrendingOptions {
  windowDays?: number;
  limit?: number;
}

/** A trending scene and its score. */
export interface TrendingSplat extends Splat {
  trending: { source: string; score: number; impressions: number; uniqueViews: number };
}

/** The answer of trendingSplats. */
export interface Trending {
  splats: TrendingSplat[];
  trending: { windowDays: number; since: string; count: number; windowCount: number };
}

/** Impressions and unique viewers. */
export interface ViewCounts {
  impressions: number;
  uniqueViews: number;
}

/** A scene's views per day over a window. */
export interface Analytics {
  splatId: string;
  windowDays: number;
  since: string;
  totals: ViewCounts;
  days: Array<ViewCounts & { date: string }>;
}

/** The body of mintSession; `externalUserId` scopes the session to a customer (sent as a header). */
export interface SessionRequest {
  type?: 'viewer' | 'editor';
  splatId?: string;
  user?: { name: string; avatarUrl?: string };
  coEdit?: boolean;
  externalUserId?: string;
  /** Defaults to the client's public key. */
  publicKey?: string;
}

/** A minted embed session. */
export interface Session {
  sessionToken: string;
  expiresAt: string;
}

/** The body of requestFileUpload. */
export interface FileUploadRequest {
  fileName: string;
  contentType: string;
  fileSize: number;
}

/** A signed single-PUT URL and the fileUrl to commit. */
export interface FileUpload {
  uploadUrl: string;
  fileUrl: string;
  expiresAt: string;
}

/** One file of a LOD folder upload. */
export interface FolderFile {
  relativePath: string;
  contentType: string;
  fileSize: number;
}

/** The answer of requestFolderUpload. */
export interface FolderUpload {
  folderKey: string;
  manifestUrl: string;
  uploads: Array<{ relativePath: string; uploadUrl: string; key: string }>;
  expiresAt: string;
}

/** The body of requestImageUploads. */
export interface ImageUploadRequest {
  thumbnail?: { contentType: string; fileSize: number };
  depth?: { contentType: string; fileSize: number };
}

/** The answer of requestImageUploads. */
export interface ImageUploads {
  thumbnail: FileUpload | null;
  depth: FileUpload | null;
}

/** One signed part URL of a multipart upload. */
export interface SignedPart {
  partNumber: number;
  uploadUrl: string;
}

/** A started multipart upload. */
export interface MultipartUpload {
  uploadId: string;
  fileUrl: string;
  partSize: number;
  parts: SignedPart[];
  expiresAt: string;
}

/** Where a multipart upload stands (resume). */
export interface MultipartStatus {
  uploadId: string;
  state: 'uploading' | 'completed';
  fileUrl: string;
  fileSize: number;
  partSize: number;
  parts: Array<{ partNumber: number; etag: string; size: number; uploadUrl: string }>;
  missingParts: SignedPart[];
  expiresAt: string;
}

/** A stored part, for completeMultipartUpload. */
export interface CompletedPart {
  partNumber: number;
  etag: string;
}

/** The answer of a finished clone. */
export interface CloneResult {
  splatId: string;
  sourceSplatId: string;
  splat: Splat;
  usage: Usage;
}

/** A running clone job. */
export interface CloneJob {
  jobId: string;
  sourceSplatId: string;
  copiedObjects: number;
  totalObjects: number;
}

/** A webhook endpoint; `secret` only in the answers of create and rotate. */
export interface Webhook {
  id: string;
  url: string;
  events: string[];
  description: string;
  secret?: string;
  createdAt: string;
}

/** The body of createWebhook; no events means all of them. */
export interface WebhookInput {
  url: string;
  events?: string[];
  description?: string;
}

/** One delivery of an endpoint's log. */
export interface WebhookDelivery {
  id: string;
  type: string;
  state: string;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  nextAttemptAt: string | null;
  createdAt: string;
}

/** One page of an endpoint's delivery log. */
export interface WebhookDeliveries {
  deliveries: WebhookDelivery[];
  nextCursor: string | null;
}

/** A scene's rendition job (operator API). */
export interface Rendition {
  splatId: string;
  integrationId: string;
  externalUserId: string;
  state: string;
  message: string | null;
  renditionType: string | null;
  renditionBytes: number | null;
  gaussians: number | null;
  fileSizeBytes: number;
  workflowId: string;
  createdAt: string;
}

/** The filter of listRenditions. */
export interface RenditionFilter {
  state?: string;
  integrationId?: string;
  limit?: number;
}
