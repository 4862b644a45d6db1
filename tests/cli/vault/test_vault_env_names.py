"""`vault env` / `vault run --var-names credential`: variables named after each credential's name, so
two accounts of one service can be used together (issue 12), and clashes said clearly. Every door."""
from __future__ import annotations

import sys

import pytest

from tests.vault_helpers import install_service, make_credential

STRIPE_TOML = ('service = "stripe"\nname = "Stripe"\ndescription = "d"\ncredentialType = "apiKey"\n'
               'envVars = { apiKey = "STRIPE_API_KEY", instanceUrl = "SK_URL" }\nfields = ["instanceUrl"]\n')


@pytest.fixture
def two_accounts(backend):
    install_service(backend.workspace, STRIPE_TOML)
    live = make_credential(backend.workspace, backend.owner["id"], "stripe", {"apiKey": "sk-live-1"},
                           {"instanceUrl": "https://live.example"})
    test = make_credential(backend.workspace, backend.owner["id"], "stripe", {"apiKey": "sk-test-2"},
                           {"instanceUrl": "https://test.example"})
    backend.wsctl("vault", "rename", live["id"], "stripe-live")
    backend.wsctl("vault", "rename", test["id"], "stripe.test")
    return live, test


def _issued(backend, cred) -> list:
    return [e for e in backend.ok("GET", f"/v1/credentials/{cred['id']}/access-log")["entries"]
            if e["outcome"] == "issued"]


def test_names_come_from_each_credential(backend, two_accounts):
    _live, _test = two_accounts
    r = backend.wsctl("vault", "env", "stripe-live", "stripe.test", "--reason", "both", "--var-names", "credential",
                      "--format", "json")
    assert r.json == {"STRIPE_LIVE_API_KEY": "sk-live-1", "STRIPE_LIVE_SK_URL": "https://live.example",
                      "STRIPE_TEST_API_KEY": "sk-test-2", "STRIPE_TEST_SK_URL": "https://test.example"}
    out = backend.wsctl("vault", "env", "stripe-live", "--reason", "one", "--var-names", "credential").out
    assert out == "export STRIPE_LIVE_API_KEY=sk-live-1\nexport STRIPE_LIVE_SK_URL=https://live.example\n"
    # vault token --format env names them the same way
    r = backend.wsctl("vault", "token", "stripe.test", "--reason", "one", "--format", "env", "--var-names", "credential")
    assert r.out == "STRIPE_TEST_API_KEY='sk-test-2'\nSTRIPE_TEST_SK_URL='https://test.example'\n"
    # the default is still the catalog's names
    assert backend.wsctl("vault", "env", "stripe-live", "--reason", "one", "--json").json == \
        {"STRIPE_API_KEY": "sk-live-1", "SK_URL": "https://live.example"}
    # vault run sets the same names in the child
    code = "import os; print(sorted(k for k in os.environ if k.startswith('STRIPE_')))"
    r = backend.wsctl("vault", "run", "stripe-live", "stripe.test", "--reason", "run", "--var-names", "credential",
                      "--", sys.executable, "-c", code)
    assert r.out.strip() == str(sorted(["STRIPE_LIVE_API_KEY", "STRIPE_LIVE_SK_URL", "STRIPE_TEST_API_KEY",
                                        "STRIPE_TEST_SK_URL"]))


def test_a_credential_named_after_its_service_keeps_the_catalog_names(backend):
    install_service(backend.workspace, STRIPE_TOML)
    cred = make_credential(backend.workspace, backend.owner["id"], "stripe", {"apiKey": "sk-1"},
                           {"instanceUrl": "https://u.example"})
    assert cred["name"] == "stripe"
    assert backend.wsctl("vault", "env", "stripe", "--reason", "r", "--var-names", "credential", "--json").json == \
        {"STRIPE_API_KEY": "sk-1", "STRIPE_SK_URL": "https://u.example"}


def test_the_clash_without_it_names_both_and_the_way_out(backend, two_accounts):
    live, test = two_accounts
    r = backend.wsctl("vault", "env", "stripe-live", "stripe.test", "--reason", "clash", expect=7)
    assert r.out == "false\n"   # export lines, for eval: the one line that fails it (cli/main.py)
    line = r.err.strip()
    assert f"stripe-live ({live['id']})" in line and f"stripe.test ({test['id']})" in line
    assert "STRIPE_API_KEY" in line and "--var-names credential" in line
    assert "STRIPE_LIVE_API_KEY" in line and "STRIPE_TEST_API_KEY" in line
    assert "sk-live-1" not in r.err and _issued(backend, live) == [] and _issued(backend, test) == []


def test_names_that_clash_after_deriving_are_refused_before_issuing(backend, two_accounts):
    live, test = two_accounts
    backend.wsctl("vault", "rename", test["id"], "stripe_live")   # STRIPE_LIVE too
    r = backend.wsctl("vault", "env", "stripe-live", "stripe_live", "--reason", "x", "--var-names", "credential",
                      expect=7)
    assert "both set STRIPE_LIVE_API_KEY" in r.err and "vault rename" in r.err and r.out == "false\n"
    assert _issued(backend, live) == [] and _issued(backend, test) == []


@pytest.mark.parametrize("name, why", [("7eleven", "cannot begin"), ("ld-x", "LD_X_API_KEY")])
def test_a_name_that_cannot_make_a_variable_is_refused_before_issuing(backend, two_accounts, name, why):
    live, _ = two_accounts
    backend.wsctl("vault", "rename", live["id"], name)
    r = backend.wsctl("vault", "env", name, "--reason", "x", "--var-names", "credential", expect=7)
    assert why in r.err and "vault rename" in r.err and r.out == "false\n"
    assert _issued(backend, live) == []


def test_a_wrong_choice_is_a_usage_error(backend, two_accounts):
    r = backend.wsctl("vault", "env", "stripe-live", "--reason", "x", "--var-names", "nope", expect=2)
    assert "service" in r.err and "credential" in r.err
