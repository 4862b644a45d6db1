r"""m029_token_issue: a token issue in one statement on PostgreSQL (issue 27, item 3).

`wsctl_issue_token(cred, member, key_id, caller_kind, reason, at, now)` does in one call, under
the workspace's writer lock held shared (as db.transaction(appends_only=True) holds it), what
engine/vault/routes.issue_token does in its transaction: reads the credential with the member's
access and the integration's env vars, and appends the audit row. It answers the row the store's
get_credential_to_issue reads, plus `outcome` and `logged_fields`:

- no row: no such credential, or the member has no access to it (nothing written);
- outcome 'refused': the member is a viewer; the refused row was written (fields []);
- outcome 'issued': the token may be released; the issued row was written, naming
  `logged_fields` (a JSON list), the fields token_fields releases;
- outcome NULL: nothing written; the engine decides in its own transaction (a credential that
  needs a reconnect, an OAuth token within a minute of its expiry, which may need a refresh, or
  anything the function does not read as the engine does: JSON it cannot parse, an expiry in
  another form).

The field names follow engine/vault/routes.token_fields, read from `secret_names_json` (the keys of
the sealed secrets, written with them). A credential whose token is fresh enough for any margin
(not OAuth, no expiry, or more than 60 s left: needs_refresh's first test) is issued here; the
rest goes the engine's way. SQLite has no such function: its transaction already costs no round
trip.
"""
from workspacectl.engine.db.conn import Conn

NEVER_ISSUED = "('refreshToken', 'idToken', 'clientSecret')"


def up(conn: Conn) -> None:
    """Nothing on SQLite."""


POSTGRES_SQL = r"""
CREATE OR REPLACE FUNCTION wsctl_token_fields(ctype text, names_json text, fields_json text, env_json text,
                                              expires text, has_blob boolean)
RETURNS text LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
    secret_names text[] := '{}';
    names text[];
    fields jsonb;
    env jsonb;
BEGIN
    IF has_blob THEN
        IF jsonb_typeof(names_json::jsonb) <> 'array' THEN
            RETURN NULL;
        END IF;
        SELECT coalesce(array_agg(e #>> '{}'), '{}') INTO secret_names FROM jsonb_array_elements(names_json::jsonb) e
         WHERE jsonb_typeof(e) = 'string';
    END IF;
    IF ctype = 'oauth2' THEN
        names := CASE WHEN 'accessToken' = ANY(secret_names) THEN ARRAY['accessToken', 'tokenType']
                      ELSE '{}'::text[] END;
    ELSE
        names := ARRAY(SELECT n FROM unnest(secret_names) n
                       WHERE n NOT IN ('refreshToken', 'idToken', 'clientSecret', 'accessToken'));
    END IF;
    fields := coalesce(nullif(fields_json, '')::jsonb, '{}'::jsonb);
    env := coalesce(nullif(env_json, '')::jsonb, '{}'::jsonb);
    IF jsonb_typeof(fields) <> 'object' OR jsonb_typeof(env) <> 'object' THEN
        RETURN NULL;
    END IF;
    names := names || ARRAY(
        SELECT u FROM (SELECT key AS u FROM jsonb_each(env) WHERE jsonb_typeof(value) = 'string'
                       UNION SELECT 'instanceUrl') usable
        WHERE u NOT IN ('refreshToken', 'idToken', 'clientSecret')
          AND jsonb_typeof(fields -> u) = 'string' AND fields ->> u <> '');
    IF coalesce(expires, '') <> '' THEN
        names := names || ARRAY['expiresAt'];
    END IF;
    RETURN (SELECT '[' || coalesce(string_agg(to_json(n)::text, ', ' ORDER BY n COLLATE "C"), '') || ']'
            FROM (SELECT DISTINCT n FROM unnest(names) n) d);
EXCEPTION WHEN others THEN
    RETURN NULL;   -- JSON it cannot read: the engine decides
END $fn$;

CREATE OR REPLACE FUNCTION wsctl_issue_token(p_cred text, p_member text, p_key text, p_kind text, p_reason text,
                                             p_at text, p_now text)
RETURNS TABLE (id text, service text, name text, credential_type text, owner_member_id text, fields_json text,
               scopes_json text, secret_names_json text, status text, token_type text, expires_at text,
               synced_at text, refreshed_at text, refresh_retry_at text, refresh_lease_owner text,
               refresh_lease_until text, last_error text, created_at text, updated_at text, secret_blob bytea,
               access text, env_vars_json text, outcome text, logged_fields text)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
    r record;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(2004050804, 1);   -- the writer lock, shared (engine/db/postgres.py)
    SELECT c.id, c.service, c.name, c.credential_type, c.owner_member_id, c.fields_json, c.scopes_json,
           c.secret_names_json, c.status, c.token_type, c.expires_at, c.synced_at, c.refreshed_at,
           c.refresh_retry_at, c.refresh_lease_owner, c.refresh_lease_until, c.last_error, c.created_at,
           c.updated_at, c.secret_blob,
           CASE WHEN c.owner_member_id = p_member THEN 'owner' ELSE COALESCE(gm.role, gw.role) END AS access,
           i.env_vars_json
      INTO r
      FROM credentials c
      LEFT JOIN credential_grants gm ON gm.credential_id = c.id AND gm.grantee = p_member
      LEFT JOIN credential_grants gw ON gw.credential_id = c.id AND gw.grantee = 'workspace'
      LEFT JOIN integrations i ON i.service = c.service
     WHERE c.id = p_cred;
    IF NOT FOUND OR r.access IS NULL THEN
        RETURN;
    END IF;
    outcome := NULL;
    logged_fields := NULL;
    IF r.access = 'viewer' THEN
        INSERT INTO credential_access_log (credential_id, at, member_id, key_id, caller_kind, reason, fields_json,
                                           outcome)
        VALUES (p_cred, p_at, p_member, p_key, p_kind, p_reason, '[]', 'refused');
        outcome := 'refused';
        logged_fields := '[]';
    ELSIF r.status <> 'needs_reconnect' AND (r.credential_type <> 'oauth2' OR r.expires_at IS NULL OR
          CASE WHEN r.expires_at ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$'
                    AND p_now ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$'
               THEN r.expires_at::timestamptz > p_now::timestamptz + interval '60 seconds'
               ELSE false END) THEN
        logged_fields := wsctl_token_fields(r.credential_type, r.secret_names_json, r.fields_json, r.env_vars_json,
                                            r.expires_at, r.secret_blob IS NOT NULL);
        IF logged_fields IS NOT NULL THEN
            INSERT INTO credential_access_log (credential_id, at, member_id, key_id, caller_kind, reason,
                                               fields_json, outcome)
            VALUES (p_cred, p_at, p_member, p_key, p_kind, p_reason, logged_fields, 'issued');
            outcome := 'issued';
        END IF;
    END IF;
    id := r.id; service := r.service; name := r.name; credential_type := r.credential_type;
    owner_member_id := r.owner_member_id; fields_json := r.fields_json; scopes_json := r.scopes_json;
    secret_names_json := r.secret_names_json; status := r.status; token_type := r.token_type;
    expires_at := r.expires_at; synced_at := r.synced_at; refreshed_at := r.refreshed_at;
    refresh_retry_at := r.refresh_retry_at; refresh_lease_owner := r.refresh_lease_owner;
    refresh_lease_until := r.refresh_lease_until; last_error := r.last_error; created_at := r.created_at;
    updated_at := r.updated_at; secret_blob := r.secret_blob; access := r.access; env_vars_json := r.env_vars_json;
    RETURN NEXT;
END $fn$;
"""
