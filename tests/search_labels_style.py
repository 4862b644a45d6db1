"""Still more labelled tuning phrases for operation search, written the way people type into a
search box (short, vague, lower case, some misspelt, naming the service or not), over the same
12 shared documents as tests/search_labels.py.

How they were made: 8 operations drawn per service at random (seeded, random.Random(1314) over
the operations sorted by opId), from those that no phrase of the other label sets (tuning or
holdout) names, so these phrases add operations to the tuning data and none of the holdout's;
for each a phrase written by hand before any ranking of it was looked at. Siblings that answer as
well as the drawn operation are listed beside it; when another service plainly answers too, the
phrase names the service. Tuning phrases: the vectors (bench/train_embeddings.py) and the
re-rank (bench/train_rerank.py) are fitted on them; the holdout is never read for tuning.
"""
from __future__ import annotations

_PHRASES: list[tuple[str, tuple[str, ...]]] = [
    # asana
    ("portfolio membership details", ("asana.get-portfolio-membership",)),
    ("link a supporting goal to a goal", ("asana.add-supporting-relationship",)),
    ("settings of a project in a portfolio", ("asana.get-project-portfolio-setting",)),
    ("who is in which asana team", ("asana.get-team-memberships", "asana.get-team-memberships-for-team")),
    ("edit a comment on a task asana", ("asana.update-story",)),
    ("remove a collaborator from a goal", ("asana.remove-followers",)),
    ("read the project brief", ("asana.get-project-brief",)),
    ("delete an asana goal", ("asana.delete-goal",)),
    # box
    ("stop a box webhook", ("box.delete-webhooks-id",)),
    ("which folders a retention policy applies to", ("box.get-retention-policies-id-assignments",)),
    ("unassign a storage policy", ("box.delete-storage-policy-assignments-id",)),
    ("remove the shared link of a web link", ("box.put-web-links-id-remove-shared-link",)),
    ("change metadata on a box file", ("box.put-files-id-metadata-id-id",)),
    ("delete a folder in box", ("box.delete-folders-id",)),
    ("duplicate a file request", ("box.post-file-requests-id-copy",)),
    ("change the shared link of a file", ("box.put-files-id-update-shared-link",)),
    # discord
    ("edit a soundboard sound", ("discord.update-guild-soundboard-sound",)),
    ("make a server template discord", ("discord.create-guild-template",)),
    ("users subscribed to an event exception", ("discord.list-guild-scheduled-event-exception-users",)),
    ("upload a sticker to my server", ("discord.create-guild-sticker",)),
    ("delete an exception of a recurring event", ("discord.delete-guild-scheduled-event-exception",)),
    ("search messages in a discord server", ("discord.guild-search",)),
    ("sticker packs", ("discord.list-sticker-packs",)),
    ("upcoming events in a server", ("discord.list-guild-scheduled-events",)),
    # github
    ("a comment on a commit", ("github.repos-get-commit-comment",)),
    ("get one release", ("github.repos-get-release",)),
    ("deploy keys of a repo", ("github.repos-list-deploy-keys",)),
    ("github app by its slug", ("github.apps-get-by-slug",)),
    ("watch a repository", ("github.activity-set-repo-subscription",)),
    ("remove a label github", ("github.issues-delete-label",)),
    ("somebody's gpg keys", ("github.users-list-gpg-keys-for-user",)),
    ("edit a comment on a comit", ("github.repos-update-commit-comment",)),
    # intercom
    ("subscribe a contact to a subscription type", ("intercom.attach-subscription-type-to-contact",)),
    ("set up office hours", ("intercom.create-office-hours-schedule",)),
    ("list custom object instances", ("intercom.list-custom-object-instances",)),
    ("internal articles in intercom", ("intercom.list-internal-articles",)),
    ("mark an admin as away", ("intercom.set-away-admin",)),
    ("change an audience", ("intercom.update-audience",)),
    ("answer a support ticket", ("intercom.reply-ticket",)),
    ("update a conversation intercom", ("intercom.update-conversation",)),
    # openai
    ("complete a prompt with the old completions api", ("openai.create-completion",)),
    ("delete a version of a skill", ("openai.delete-skill-version",)),
    ("cancel an upload openai", ("openai.cancel-upload",)),
    ("edit the metadata of a stored chat completion", ("openai.update-chat-completion",)),
    ("archive an openai project", ("openai.archive-project",)),
    ("get a vector store", ("openai.get-vector-store",)),
    ("status of a batch job", ("openai.retrieve-batch",)),
    ("delete an eval run", ("openai.delete-eval-run",)),
    # sendgrid
    ("is this email globally unsubscribed", ("sendgrid.get-asm-suppressions-global-email",)),
    ("unlink a branded link from a subuser", ("sendgrid.delete-whitelabel-links-subuser",)),
    ("new sender identity", ("sendgrid.post-marketing-senders",)),
    ("remove an ip from the allow list", ("sendgrid.delete-access-settings-whitelist-rule-id",)),
    ("rename an unsubscribe group", ("sendgrid.patch-asm-groups-group-id",)),
    ("update sso certificate", ("sendgrid.patch-sso-certificates-cert-id",)),
    ("all my ip pools", ("sendgrid.get-ips-pools",)),
    ("add one recipient to a contact list", ("sendgrid.post-contactdb-lists-list-id-recipients-recipient-id",)),
    # slack
    ("deny an invite request slack", ("slack.admin-invite-requests-deny",)),
    ("someone left the call", ("slack.calls-participants-remove",)),
    ("test the slack api", ("slack.api-test",)),
    ("pending invite requests", ("slack.admin-invite-requests-list",)),
    ("open a dialog for a user", ("slack.dialog-open",)),
    ("add a remote file to slack", ("slack.files-remote-add",)),
    ("share an external file in a channel", ("slack.files-remote-share",)),
    ("my starred items in slack", ("slack.stars-list",)),
    # spotify
    ("play music on another device", ("spotify.transfer-a-users-playback",)),
    ("browse categories", ("spotify.get-categories",)),
    ("get an audiobook", ("spotify.get-an-audiobook",)),
    ("change the cover image of a playlist", ("spotify.upload-custom-playlist-cover",)),
    ("whats next in my queue", ("spotify.get-queue",)),
    ("albums i saved", ("spotify.get-users-saved-albums",)),
    ("songs in a playlist", ("spotify.get-playlists-tracks", "spotify.get-playlists-items")),
    ("did i save these audiobooks", ("spotify.check-users-saved-audiobooks",)),
    # square
    ("edit a location custom attribute definition", ("square.update-location-custom-attribute-definition",)),
    ("merchant custom attribute definitions", ("square.list-merchant-custom-attribute-definitions",)),
    ("get several bookings at once", ("square.bulk-retrieve-bookings",)),
    ("custom attribute definitions for bookings", ("square.list-booking-custom-attribute-definitions",)),
    ("clock in an employee", ("square.create-timecard",)),
    ("get a location custom attribute definition", ("square.retrieve-location-custom-attribute-definition",)),
    ("details of a square location", ("square.retrieve-location",)),
    ("look up a transaction in square", ("square.retrieve-transaction",)),
    # stripe
    ("update a customer's card", ("stripe.post-customers-customer-cards-id", "stripe.post-customers-customer-sources-id")),
    ("refunds of a charge", ("stripe.get-charges-charge-refunds",)),
    ("delete a sku", ("stripe.delete-skus-id",)),
    ("get a radar review", ("stripe.get-reviews-review",)),
    ("capabilities of a connected account", ("stripe.get-accounts-account-capabilities",)),
    ("get a refund stripe", ("stripe.get-refunds-refund", "stripe.get-charges-charge-refunds-refund")),
    ("create a radar value list", ("stripe.post-radar-value-lists",)),
    ("update an issuing transaction", ("stripe.post-issuing-transactions-transaction",)),
    # twilio
    ("delete a picture from an mms", ("twilio.delete-media",)),
    ("my conference calls", ("twilio.list-conference",)),
    ("remove a sip credential", ("twilio.delete-sip-credential",)),
    ("delete a conference recording", ("twilio.delete-conference-recording",)),
    ("map a credential list for sip registration", ("twilio.create-sip-auth-registrations-credential-list-mapping",)),
    ("map a credential list for sip calls", ("twilio.create-sip-auth-calls-credential-list-mapping",)),
    ("twilio signing keys", ("twilio.list-signing-key",)),
    ("account notifications twilio", ("twilio.list-notification",)),
]

# (phrase, relevant opIds, fold): fold = index % 5, for cross-validation.
STYLE_LABELS: list[tuple[str, frozenset[str], str]] = [
    (phrase, frozenset(ops), f"fold{i % 5}") for i, (phrase, ops) in enumerate(_PHRASES)
]
