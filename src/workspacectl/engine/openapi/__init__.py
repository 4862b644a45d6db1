"""The served OpenAPI document (GET /v1/openapi.json) and its schema blocks."""
