"""Which environment variable names a credential may set (the one list; docs/api.md quotes it).

A service definition maps token fields to variable names (`envVars`), and `vault env`,
`vault run` and `vault token --format env` set those variables from secrets. A name that changes
how a program is found, loaded or run (`PATH`, `LD_PRELOAD`, `BASH_ENV`, `PYTHONPATH`,
`NODE_OPTIONS`, a proxy or a CA bundle...) would let whoever writes the catalog run code in, or
read the traffic of, every child a member starts. Such names are refused at import and again
just before injecting, so a catalog row written before this rule cannot slip one through.

Pure: imported by the engine (import) and by the CLI (injection); no I/O.
"""
from __future__ import annotations

import re

NAME = re.compile(r"[A-Z_][A-Z0-9_]*\Z")
MAX_NAME_CHARS = 128

# Exact names. Grouped by what they change; a member's shell, loader or interpreter reads them.
REFUSED_NAMES = frozenset({
    # where programs and files are found; who and where the process thinks it is
    "PATH", "HOME", "SHELL", "USER", "LOGNAME", "PWD", "OLDPWD", "CDPATH", "TMPDIR", "TMP", "TEMP",
    "FPATH", "MANPATH", "INFOPATH", "TERMINFO", "TERMINFO_DIRS", "TERMCAP", "MAIL", "MAILPATH",
    # shells: files sourced, code run at each prompt or trace, word splitting
    "ENV", "IFS", "PS0", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS",
    "GLOBIGNORE", "HISTFILE", "INPUTRC", "ZDOTDIR", "POSIXLY_CORRECT", "EXECIGNORE",
    # the C library: character sets, locales, resolver, allocator tunables, time zone files
    "GCONV_PATH", "LOCPATH", "NLSPATH", "HOSTALIASES", "RESOLV_HOST_CONF", "LOCALDOMAIN", "RES_OPTIONS",
    "GLIBC_TUNABLES", "TZ", "TZDIR", "LANG", "LANGUAGE",
    # interpreters and runtimes that load code named by a variable
    "PERLLIB", "CLASSPATH", "JDK_JAVA_OPTIONS", "PHPRC", "PHP_INI_SCAN_DIR", "TCLLIBPATH", "TCL_LIBRARY",
    "GOFLAGS", "GOPATH", "GOROOT", "GOPROXY", "GOENV", "GOTOOLCHAIN", "RUSTC_WRAPPER", "RUSTFLAGS",
    "RUSTDOCFLAGS", "R_PROFILE", "R_PROFILE_USER", "R_ENVIRON", "R_ENVIRON_USER", "R_LIBS", "R_LIBS_USER",
    "ERL_LIBS", "ERL_FLAGS", "ERL_AFLAGS", "ERL_ZFLAGS", "ELIXIR_ERL_OPTIONS", "GUILE_LOAD_PATH",
    "OCAMLPATH", "OCAMLRUNPARAM", "EMACSLOADPATH",
    # build tools and package managers (a script shell, an index, a wrapper)
    "MAKEFLAGS", "MAKEFILES", "MFLAGS", "CC", "CXX", "CPP", "LD", "AR", "CFLAGS", "CXXFLAGS", "CPPFLAGS",
    "LDFLAGS", "PKG_CONFIG_PATH", "CMAKE_PREFIX_PATH", "CONDA_PREFIX", "VIRTUAL_ENV", "UV_INDEX_URL",
    # programs other programs start: editors, pagers, askpass helpers, browsers
    "EDITOR", "VISUAL", "PAGER", "MANPAGER", "LESSOPEN", "LESSCLOSE", "LESSKEY", "BROWSER",
    "SSH_ASKPASS", "SUDO_ASKPASS", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "GNUPGHOME", "DISPLAY",
    # where a child sends traffic and whom it trusts
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY", "RSYNC_PROXY", "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE", "CURL_HOME", "WGETRC", "NETRC", "KRB5_CONFIG", "KRB5CCNAME", "KUBECONFIG",
    "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY",
    # our own: a nested wsctl would act as someone else, or against another server or workspace.
    # (Exact names, not the WSCTL_ prefix: a service named wsctl-api may have WSCTL_API_API_KEY.)
    "WSCTL_API_KEY", "WSCTL_TOKEN", "WSCTL_SERVER", "WSCTL_WORKSPACE", "WSCTL_PROFILE", "WSCTL_HOME",
    "WSCTL_MASTER_KEY", "WSCTL_MASTER_KEY_PREVIOUS", "WSCTL_NOW_OFFSET_SECONDS", "WSCTL_DEBUG",
    "WSCTL_MEMORY_INTERVAL", "WSCTL_MEMORY_POLICY", "WSCTL_BUSY_TIMEOUT_MS",
})

# Whole families, by prefix.
REFUSED_PREFIXES = (
    "LD_", "DYLD_",                        # the dynamic loader (LD_PRELOAD, LD_LIBRARY_PATH, DYLD_INSERT_...)
    "BASH_", "ZSH_",                       # BASH_ENV, BASH_XTRACEFD, BASH_LOADABLES_PATH, BASH_FUNC_...
    "LC_", "MALLOC_",                      # locales, allocator checks
    "PYTHON", "PIP_", "PERL5", "PERL_", "PERLIO", "RUBY", "GEM_", "BUNDLE_", "NODE_", "NPM_CONFIG_",
    "YARN_", "DENO_", "BUN_", "JAVA_", "_JAVA_", "LUA_", "DOTNET_", "COMPLUS_", "CORECLR_",
    "CARGO_", "CGO_",
    "GIT_",                                # GIT_SSH_COMMAND, GIT_EXEC_PATH, GIT_CONFIG_*
    "SSL_", "OPENSSL_",                    # SSL_CERT_FILE, OPENSSL_CONF (loads engines)
    "XDG_",                                # where every program reads its configuration
)


def refusal(name: object) -> str | None:
    """Why `name` may not be set from a credential, or None when it may."""
    if not isinstance(name, str) or not name:
        return "an environment variable name must be a non-empty string"
    if len(name) > MAX_NAME_CHARS:
        return f"an environment variable name is at most {MAX_NAME_CHARS} characters"
    if not NAME.match(name):
        return "an environment variable name is upper case letters, digits and '_' ([A-Z_][A-Z0-9_]*), " \
               "such as ACME_TOKEN"
    if name in REFUSED_NAMES or name.startswith(REFUSED_PREFIXES):
        return f"{name} changes how programs are found, loaded or run, so a credential may not set it; " \
               "pick a name of the service's own, such as ACME_TOKEN"
    return None
