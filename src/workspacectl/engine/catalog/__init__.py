"""The integration catalog: routes, import (TOML, OpenAPI), markdown, search, admin, triggers, built-ins."""
