/**
 * `@tessera/admin`: a typed client of Tessera's integrator and operator APIs, generated from the
 * service's OpenAPI document (src/generated/), with pagination, retries of calls safe to repeat
 * and typed errors. Works in Node ≥ 20 and browsers: fetch only.
 */
export type { AdminAuth } from './auth.js';
export { createTesseraAdmin, TesseraAdmin, type TesseraAdminOptions } from './client.js';
export {
  type AdminErrorCode,
  AdminErrorCodes,
  isTesseraAdminError,
  RegistrationErrorCodes,
  TesseraAdminError,
} from './errors.js';
export type { components, operations, paths } from './generated/openapi.js';
export { AUDIT_EVENT_TYPES, OPERATIONS } from './generated/operations.js';
export type { OperationId, PathParams, QueryParams, RequestBody, Result, Schema } from './operation-types.js';
export type { Paginated } from './paginate.js';
export type { Audit, AuditEvent, AuditFilter, AuditPage } from './resources/audit.js';
export type { ClientMetadata, Clients, OAuthClient, RegisteredClient } from './resources/clients.js';
export type {
  ConsoleMember,
  ConsoleResource,
  Keys,
  SigningKey,
  Stats,
  StatsResource,
} from './resources/operator.js';
export type { Branding, BrandingResource, ClientRegistration } from './resources/project.js';
export type { CreatedProject, Project, Projects } from './resources/projects.js';
export type {
  Claims,
  ClaimsResource,
  Device,
  Devices,
  Grant,
  Grants,
  Passkey,
  Passkeys,
  Pin,
  Session,
  Sessions,
  User,
  Users,
} from './resources/users.js';
export type { CreatedWebhook, Webhook, WebhookDelivery, Webhooks } from './resources/webhooks.js';
export type { CallOptions, RetryOptions } from './transport.js';
