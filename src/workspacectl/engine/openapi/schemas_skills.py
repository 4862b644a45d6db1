"""/v1/openapi.json for skills (docs/api.md "Skills", CONTRACT §8).

Merged into openapi_schemas.ROUTE_DOCS and COMPONENTS; import that module, not this one.
Shapes follow engine/skills/routes.py, skills/versions.py, skills/bundles.py and skills/transfers.py.
Every `{id}` may also be the name of a skill that is not archived.
"""
from __future__ import annotations

from workspacectl.engine.openapi.blocks import (BOOL, INT, NOT_BLANK, PAGE, STR, TIME, array, nullable, obj,
                                                       page_of, query, ref, text)
from workspacectl.engine.skills.bundles import MAX_INLINE_CONTENT, MAX_INLINED_TOTAL, MAX_SHOWN_CONTENT
from workspacectl.engine.skills.routes import STATUSES

_NAME = text(1, 64, r"^[a-z0-9]+(-[a-z0-9]+)*$",
             description="Agent Skills name: lowercase letters, digits and single hyphens; unique among skills "
                         "that are not archived.")
_DESCRIPTION = text(1, 1024, NOT_BLANK)
_BASE_VERSION = {"type": "integer", "minimum": 0, "maximum": 2**53,
                 "description": "The live version the change is based on; another is 409 with detail.currentVersion."}
_UPLOAD_ID = text(1, description="From bundle-upload-url; the archive must have been PUT to its url.")
_VERSION = {
    "id": STR, "skillId": STR, "number": INT, "publishedAt": TIME, "publishedBy": STR,
    "source": text(enum=["inline", "bundle", "revert"]),
    "sha256": text(64, 64, description="SHA-256 of the canonical tar before gzip."),
}

COMPONENTS: dict[str, dict] = {
    "Skill": obj({
        "id": STR, "name": STR, "description": STR, "status": text(enum=list(STATUSES)), "enabled": BOOL,
        "version": {**INT, "description": "The live version; 0 while draft."}, "projectId": nullable(STR),
        "createdBy": STR, "createdAt": TIME, "updatedAt": TIME, "lastUsedAt": nullable(TIME),
        "canEdit": {**BOOL, "description": "Whether the caller may change it (never when archived)."}},
        required="all"),
    "SkillVersion": obj(_VERSION, required="all"),
    "SkillPublished": obj({**_VERSION, "skill": ref("Skill")}, required="all",
                          description="The version just published and the skill record after it."),
    "SkillProblem": obj({"path": text(description="\"\" for the whole archive."), "message": STR},
                        required="all"),
    "PresignedUrl": obj({"url": text(description="http(s) from a server, file:// with the local backend; no key "
                                                 "needed, valid 15 minutes."),
                         "expiresAt": TIME}, required="all"),
}

_FILES = obj({"skillId": STR, "version": INT, "files": array(obj({
    "path": STR, "size": INT, "sha256": text(64, 64), "executable": BOOL,
    "content": nullable(text(description=f"The text of a UTF-8 file up to {MAX_SHOWN_CONTENT} bytes while the "
                                         f"answer's inlined text stays within {MAX_INLINED_TOTAL} bytes; else null.")),
    "contentOmitted": nullable(text(enum=["large", "binary", "budget"],
                                    description="Why content is null: over 1 MiB, not UTF-8 text, or past the "
                                                "answer's inline limit.")),
    "fileUrl": text(description="When content is null: the route (GET, with your key) answering a presigned "
                                "download of the file.")},
    required=["path", "size", "sha256", "executable", "content", "contentOmitted"])),
    "inlinedBytes": INT, "inlineLimit": INT}, required="all")

ROUTE_DOCS: dict[tuple[str, str], dict] = {
    # the record (engine/skills/routes.py)
    ("GET", "/v1/skills"): {
        "query": [query("status", text(enum=[*STATUSES, "all"]), "Default: draft and published."),
                  query("projectId", STR, "Only those in this specialist (404 when you cannot see it)."), *PAGE],
        "responses": {200: page_of("skills", ref("Skill"))}},
    ("POST", "/v1/skills"): {"body": obj({"name": _NAME, "description": _DESCRIPTION}, required="all"),
                             "responses": {201: ref("Skill")}},
    ("GET", "/v1/skills/{id}"): {"responses": {200: ref("Skill")}},
    ("PATCH", "/v1/skills/{id}"): {
        "body": obj({"name": _NAME, "description": _DESCRIPTION},
                    description="On a published skill SKILL.md's frontmatter follows, as a new inline version."),
        "responses": {200: ref("Skill")}},
    ("DELETE", "/v1/skills/{id}"): {"responses": {200: {**ref("Skill"), "description": "The archived skill."}}},
    ("PATCH", "/v1/skills/{id}/enabled"): {"body": obj({"enabled": BOOL}, required="all"),
                                           "responses": {200: ref("Skill")}},
    ("GET", "/v1/skills/platform/{name}"): {"responses": {200: obj({
        "name": STR, "files": array(obj({"path": STR, "size": INT, "content": STR}, required="all"),
                                    description="SKILL.md first.")}, required="all")}},
    # files and staged bundles (engine/skills/bundles.py)
    ("GET", "/v1/skills/{id}/files"): {"responses": {200: _FILES}},
    ("PUT", "/v1/skills/{id}/files"): {
        "body": obj({"path": text(1, 1024, description="A relative path inside the bundle."),
                     "content": text(0, MAX_INLINE_CONTENT, description="UTF-8 text."),
                     "baseVersion": nullable(_BASE_VERSION)}, required=["path", "content"]),
        "responses": {200: ref("SkillPublished")}},
    ("GET", "/v1/skills/{id}/bundle-url"): {"responses": {200: ref("PresignedUrl")}},
    ("GET", "/v1/skills/{id}/file-url"): {
        "query": [query("path", text(1), "A file of the live version, e.g. SKILL.md.", required=True)],
        "responses": {200: ref("PresignedUrl")}},
    ("POST", "/v1/skills/{id}/bundle-upload-url"): {"responses": {201: obj({
        "uploadId": STR, "url": text(description="Takes one PUT of the tar.gz, without an API key."),
        "expiresAt": TIME}, required="all")}},
    ("POST", "/v1/skills/{id}/validate"): {
        "body": obj({"uploadId": _UPLOAD_ID}, required="all"),
        "responses": {200: obj({"valid": BOOL, "errors": array(ref("SkillProblem")),
                                "warnings": array(ref("SkillProblem"))}, required="all",
                               description="200 even when invalid.")}},
    ("POST", "/v1/skills/{id}/publish"): {
        "body": obj({"uploadId": _UPLOAD_ID, "baseVersion": nullable(_BASE_VERSION)}, required=["uploadId"]),
        "responses": {201: ref("SkillPublished")}},
    # versions (engine/skills/versions.py)
    ("GET", "/v1/skills/{id}/versions"): {"query": PAGE,
                                          "responses": {200: page_of("versions", ref("SkillVersion"))}},
    ("POST", "/v1/skills/{id}/versions/{versionId}/revert"): {
        "body": obj({"baseVersion": nullable(_BASE_VERSION)}), "body_required": False,
        "responses": {201: ref("SkillPublished")}},
}
