"""Held-out documents for operation search (issue 29): five real public OpenAPI documents that no
model or re-rank of this project was trained on, and plain-language phrases for them.

The documents are in tests/search_unseen/ (SOURCES.md there says where each comes from). They are
of five kinds of service, none like another and none one of the 12 shared documents: a personal
budget (ynab), feature flags (launchdarkly), web hosting and deploys (netlify), video meetings
(zoom) and cloud servers (linode). Each is imported as `wsctl catalog import FILE --service <stem>`
beside the 12 shared documents, so a phrase is ranked over all 17 (3,481 + 483 operations).

The phrases were written on 2026-11-28 from each document's operation list only (operationId,
method, path, summary and the start of the description), the way a user asks (short, vague, in
everyday words, some naming the service, a few with a slip), BEFORE any ranking of these
documents by any system had been run or looked at; every operation that answers a phrase as well
is listed beside it. One phrase, "list projects", was word for word a written training phrase
(for openai's list-projects) and was reworded to "what projects are there" before any per-phrase
result had been looked at. They are never used to train or tune: the measuring documents and their
phrases stay out of every training set (MODEL.md, tests/catalog/test_search_unseen.py checks it).

UNSEEN_LABELS: [(phrase, relevant opIds, service)].
"""
from __future__ import annotations

from pathlib import Path

from workspacectl.engine.catalog.definition_values import kebab

UNSEEN_DIR = Path(__file__).resolve().parent / "search_unseen"
UNSEEN_SERVICES = ("ynab", "launchdarkly", "netlify", "zoom", "linode")

_PHRASES: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "ynab": [
        ("show all my budgets", ("getBudgets",)),
        ("how much did i spend at the grocery store", ("getTransactionsByPayee", "getTransactionsByCategory")),
        ("add an expense to my budget", ("createTransaction", "bulkCreateTransactions")),
        ("list the accounts in my ynab budget", ("getAccounts",)),
        ("recuring bills coming up", ("getScheduledTransactions",)),
        ("change how much is budgeted for groceries this month", ("updateMonthCategory",)),
        ("fix the amount on a transaction", ("updateTransaction", "updateTransactions")),
        ("which currency does my budget use", ("getBudgetSettingsById",)),
        ("see every transaction in my checking account", ("getTransactionsByAccount",)),
        ("spending categories", ("getCategories",)),
        ("who is the logged in ynab user", ("getUser",)),
        ("list the people and shops i pay", ("getPayees",)),
        ("where is this payee located", ("getPayeeLocationsByPayee", "getPayeeLocationById", "getPayeeLocations")),
        ("import many transactions at once", ("bulkCreateTransactions", "createTransaction")),
        ("budget summary for march", ("getBudgetMonth",)),
        ("details of one transaction", ("getTransactionById",)),
        ("transactions in the dining out category", ("getTransactionsByCategory",)),
        ("all months in my budget", ("getBudgetMonths",)),
        ("download everything in a budget at once", ("getBudgetById",)),
        ("look up one bank account balance", ("getAccountById",)),
        ("mark several transactions as cleared", ("updateTransactions",)),
    ],
    "launchdarkly": [
        ("turn a feature flag on for one user", ("putFlagSetting",)),
        ("create a new feature toggle", ("postFeatureFlag",)),
        ("delete a flag", ("deleteFeatureFlag",)),
        ("list all feature flags in a project", ("getFeatureFlags",)),
        ("who changed what, history of changes", ("getAuditLogEntries",)),
        ("invte a teammate to launchdarkly", ("postMembers",)),
        ("remove someone from the team", ("deleteMember",)),
        ("add a staging environment", ("postEnvironment",)),
        ("is this flag still being used", ("getFeatureFlagStatus", "getFeatureFlagStatuses")),
        ("set up a webhook", ("postWebhook",)),
        ("make a custom permission role", ("postCustomRole",)),
        ("define a group of users for targeting", ("postUserSegment",)),
        ("find users who were active last week", ("getSearchUsers",)),
        ("rename a project", ("patchProject",)),
        ("edit flag targeting rules", ("patchFeatureFlag",)),
        ("what flags does this user see", ("getUserFlagSettings",)),
        ("what projects are there", ("getProjects",)),
        ("remove a user segment", ("deleteUserSegment",)),
        ("show all team members", ("getMembers",)),
        ("change someone's role in the account", ("patchMember",)),
    ],
    "netlify": [
        ("deploy my website", ("createSiteDeploy",)),
        ("roll back to a previos deploy", ("restoreSiteDeploy",)),
        ("list my netlify sites", ("listSites", "listSitesForAccount")),
        ("create a new site", ("createSite", "createSiteInTeam")),
        ("see submissions from my contact form", ("listFormSubmissions", "listSiteSubmissions", "listFormSubmission")),
        ("add an https certificate", ("provisionSiteTLSCertificate",)),
        ("set up dns for my site", ("configureDNSForSite",)),
        ("create a build hook url", ("createSiteBuildHook",)),
        ("delete a website", ("deleteSite",)),
        ("upload a file to a deploy", ("uploadDeployFile",)),
        ("stop auto publishing and lock the current deploy", ("lockDeploy",)),
        ("add a script snippet to every page", ("createSiteSnippet",)),
        ("status of a build", ("getSiteBuild",)),
        ("list deploys of a site", ("listSiteDeploys",)),
        ("invite a member to my team", ("addMemberToAccount",)),
        ("add an ssh deploy key", ("createDeployKey",)),
        ("change site settings like the custom domain", ("updateSite",)),
        ("get notified when a deploy finishes", ("createHookBySiteId",)),
        ("which branches are deployed", ("listSiteDeployedBranches",)),
        ("upload a serverless function", ("uploadDeployFunction",)),
        ("audit log of my account", ("listAccountAuditEvents",)),
    ],
    "zoom": [
        ("schedule a zoom meeting", ("meetingCreate",)),
        ("cancle a meeting", ("meetingDelete", "meetingStatus")),
        ("reschedule a meeting to another time", ("meetingUpdate",)),
        ("who attended the meeting", ("reportMeetingParticipants", "dashboardMeetingParticipants")),
        ("download the recording of a meeting", ("recordingGet",)),
        ("register someone for a webinar", ("webinarRegistrantCreate",)),
        ("add a new user to our zoom account", ("userCreate",)),
        ("list upcoming meetings for a user", ("meetings",)),
        ("change a user's password", ("userPassword",)),
        ("set a profile photo", ("userPicture",)),
        ("delete old recordings", ("recordingDelete", "recordingDeleteOne")),
        ("approve people who registered", ("meetingRegistrantStatus", "webinarRegistrantStatus")),
        ("create a webinar", ("webinarCreate",)),
        ("add a panelist to the webinar", ("webinarPanelistCreate",)),
        ("poll results from a webinar", ("reportWebinarPolls",)),
        ("questions asked during the webinar", ("reportWebinarQA",)),
        ("call quality of participants", ("dashboardMeetingParticipantsQOS", "dashboardMeetingParticipantQOS",
                                          "dashboardWebinarParticipantsQOS", "dashboardWebinarParticipantQOS")),
        ("daily usage report", ("reportDaily",)),
        ("check if an email already has an account", ("userEmail",)),
        ("end a meeting that is running", ("meetingStatus",)),
        ("put users into a group", ("groupMembersCreate",)),
    ],
    "linode": [
        ("spin up a new server", ("createLinodeInstance",)),
        ("reboot my linode", ("rebootLinodeInstance",)),
        ("power off a vm", ("shutdownLinodeInstance",)),
        ("add an ssh key to my profile", ("addSSHKey",)),
        ("create a dns record", ("createDomainRecord",)),
        ("list my invoices", ("getInvoices",)),
        ("make a backup snapshot now", ("createSnapshot",)),
        ("restore from a backup", ("restoreBackup",)),
        ("attach block storage to a server", ("attachVolume",)),
        ("make a disk bigger", ("resizeDisk", "resizeVolume")),
        ("create a load balancer", ("createNodeBalancer",)),
        ("open a support ticket", ("createTicket",)),
        ("which data center regions are available", ("getRegions",)),
        ("create an api token", ("createPersonalAccessToken",)),
        ("turn on two factor auth", ("tfaEnable", "tfaConfirm")),
        ("cpu usage graphs for my server", ("getLinodeStats", "getLinodeStatsByYearMonth")),
        ("list the plans and prices", ("getLinodeTypes",)),
        ("create an s3 bucket", ("createObjectStorageBucket",)),
        ("pay my bill with a credit card", ("createPayment",)),
        ("reset the root password", ("resetDiskPassword",)),
        ("add another user to the account", ("createUser",)),
        ("how much bandwidth have i used", ("getTransfer", "getLinodeTransfer")),
    ],
}

UNSEEN_LABELS: list[tuple[str, frozenset[str], str]] = [
    (phrase, frozenset(f"{service}.{kebab(op)}" for op in ops), service)
    for service, phrases in _PHRASES.items() for phrase, ops in phrases
]


def unseen_files() -> list[tuple[str, Path]]:
    """(service, path) of every held-out document, in a fixed order."""
    return [(service, UNSEEN_DIR / f"{service}.yaml") for service in UNSEEN_SERVICES]


def import_unseen(ws) -> dict[str, tuple[int, dict]]:
    """Import the held-out documents through POST /v1/admin/catalog as the owner (what
    `wsctl catalog import FILE --service <stem>` does); answers {service: (status, body)}."""
    from workspacectl.engine.dispatch import Engine
    from workspacectl.engine.registry import Caller
    from workspacectl.engine.store import identity

    engine = Engine(ws)
    owner = identity.first_owner(ws.conn())
    caller = Caller(owner["id"], "owner", "session", "local")
    answers = {}
    for service, path in unseen_files():
        resp = engine.call(caller, "POST", "/v1/admin/catalog", body={
            "content": path.read_text(encoding="utf-8"), "service": service, "filename": path.name})
        answers[service] = (resp.status, resp.body)
    return answers
