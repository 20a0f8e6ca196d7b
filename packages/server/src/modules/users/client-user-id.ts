import type { User } from '../../db/schema.js';

/**
 * The `client_user_id` a user shows everywhere — tokens (access and ID), userinfo, the integrator
 * API: the integrator's own id when it set one (`PATCH /v1/users/{id}`), otherwise the user's id
 * (`sub`). One function, so the integrator API and the tokens always agree.
 */
export function clientUserIdOf(user: Pick<User, 'id' | 'client_user_id'>): string {
  return user.client_user_id ?? user.id;
}
