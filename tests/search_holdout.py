"""A fresh holdout for operation search, written before any ranking work on issue 13 and never
looked at while tuning (tuning uses tests/search_labels.py only).

Phrased the way people type into a search box: short, vague, lower case, sometimes with a typo,
sometimes naming the service and often not. `relevant` is every opId that answers the phrase
(services are the shared documents' file stems, as in search_labels.py). Each entry names
its kind so the report can be read by kind:

    short   two or three words
    vague   says the need, not the API's words ("who starred my repo")
    typo    one or two misspelt words
    named   names the service

Rules kept while writing it: no phrase copies an operation's summary; a phrase answered by
several operations lists them all; nothing here was changed after looking at a ranking.
"""
from __future__ import annotations

# (phrase, relevant opIds, kind)
HOLDOUT: list[tuple[str, tuple[str, ...], str]] = [
    # github
    ("who starred my repo", ("github.activity-list-stargazers-for-repo",), "vague"),
    ("open a pr", ("github.pulls-create",), "short"),
    ("coment on an issue", ("github.issues-create-comment",), "typo"),
    ("make a gist", ("github.gists-create",), "short"),
    ("delete repo github", ("github.repos-delete",), "named"),
    ("who follows me on github", ("github.users-list-followers-for-authenticated-user",), "vague"),
    ("find repositories about machine learning", ("github.search-repos",), "vague"),
    ("new label for issues", ("github.issues-create-label",), "short"),
    ("aprove a pull request", ("github.pulls-create-review",), "typo"),
    ("notify me when someone pushes to my repo", ("github.repos-create-webhook",), "vague"),
    ("edit a file in a repository", ("github.repos-create-or-update-file-contents",), "vague"),
    ("close an issue", ("github.issues-update",), "short"),
    # stripe
    ("create a product in stripe", ("stripe.post-products",), "named"),
    ("set a price for my product", ("stripe.post-prices",), "vague"),
    ("send money to my bank account", ("stripe.post-payouts",), "vague"),
    ("checkout page for a customer", ("stripe.post-checkout-sessions", "square.create-checkout",
                                      "square.create-payment-link", "stripe.post-payment-links"), "vague"),
    ("delete customer stripe", ("stripe.delete-customers-customer",), "named"),
    ("subscriptions of a custmer", ("stripe.get-customers-customer-subscriptions",), "typo"),
    ("void an invoice", ("stripe.post-invoices-invoice-void",), "short"),
    ("link to pay online", ("stripe.post-payment-links", "square.create-payment-link"), "vague"),
    ("saved cards of a customer", ("stripe.get-customers-customer-cards",
                                   "stripe.get-customers-customer-payment-methods"), "vague"),
    # square
    ("take a payment at a square location", ("square.create-payment",), "named"),
    ("book an appointment", ("square.create-booking",), "vague"),
    ("list my store locations", ("square.list-locations",), "vague"),
    ("sell a gift card", ("square.create-gift-card",), "vague"),
    ("find past orders", ("square.search-orders",), "vague"),
    ("how many of this item do we have left", ("square.retrieve-inventory-count",
                                                "square.batch-retrieve-inventory-counts"), "vague"),
    ("hire an employee in square", ("square.create-team-member",), "named"),
    # slack
    ("upload a file to slack", ("slack.files-upload",), "named"),
    ("remind me tomorrow", ("slack.reminders-add",), "vague"),
    ("send a slack message later", ("slack.chat-schedule-message",), "named"),
    ("edit a message i sent", ("slack.chat-update", "discord.update-message"), "vague"),
    ("read the messages in a channel", ("slack.conversations-history", "discord.list-messages"), "vague"),
    ("make a new slack channel", ("slack.conversations-create",), "named"),
    ("pin a mesage", ("slack.pins-add", "discord.create-pin"), "typo"),
    ("do not disturb", ("slack.dnd-set-snooze",), "short"),
    ("remove someone from a channel", ("slack.conversations-kick",), "vague"),
    # discord
    ("start a thread on discord", ("discord.create-thread", "discord.create-thread-from-message"), "named"),
    ("give a member a role", ("discord.add-guild-member-role",), "vague"),
    ("create an invite link for discord", ("discord.create-channel-invite",), "named"),
    ("what servers am i in", ("discord.list-my-guilds",), "vague"),
    ("schedule an event in my discord server", ("discord.create-guild-scheduled-event",), "named"),
    ("add a voice chanel", ("discord.create-guild-channel",), "typo"),
    # twilio
    ("list sms i sent", ("twilio.list-message",), "vague"),
    ("call recordings", ("twilio.list-recording", "twilio.list-call-recording"), "short"),
    ("call history twilio", ("twilio.list-call",), "named"),
    ("my phone numbers", ("twilio.list-incoming-phone-number",), "short"),
    # sendgrid
    ("add a contact to my mailing list", ("sendgrid.put-mc-contacts",), "vague"),
    ("create a mailing list", ("sendgrid.post-mc-lists", "sendgrid.post-contactdb-lists"), "short"),
    ("emails that bounced", ("sendgrid.get-suppression-bounces",), "vague"),
    ("email delivery stats", ("sendgrid.get-stats",), "short"),
    ("send a newsletter campaign", ("sendgrid.post-marketing-singlesends",), "vague"),
    # intercom
    ("write a note about a contact", ("intercom.create-note",), "vague"),
    ("search contacts in intercom", ("intercom.search-contacts",), "named"),
    ("publish a help center article", ("intercom.create-article",), "vague"),
    ("open a support ticket", ("intercom.create-ticket",), "vague"),
    ("who are the admins", ("intercom.list-admins",), "vague"),
    # box
    ("search box for a file", ("box.get-search",), "named"),
    ("duplicate a file", ("box.post-files-id-copy",), "short"),
    ("whats in this folder", ("box.get-folders-id-items",), "vague"),
    ("old versions of a file", ("box.get-files-id-versions",), "vague"),
    # asana
    ("add a subtask", ("asana.create-subtask-for-task",), "short"),
    ("new project asana", ("asana.create-project", "asana.create-project-for-team",
                           "asana.create-project-for-workspace"), "named"),
    ("attach a file to a task", ("asana.create-attachment-for-object",), "vague"),
    ("remove a task", ("asana.delete-task", "box.delete-tasks-id"), "short"),
    # spotify
    ("what song is playing now", ("spotify.get-the-users-currently-playing-track",), "vague"),
    ("make a playlist", ("spotify.create-playlist", "spotify.create-playlist-for-user"), "short"),
    ("turn the volume up", ("spotify.set-volume-for-users-playback",), "vague"),
    ("songs i listened to recently", ("spotify.get-recently-played",), "vague"),
    ("like this song", ("spotify.save-tracks-user",), "vague"),
    ("my favourite artists", ("spotify.get-users-top-artists", "spotify.get-followed"), "vague"),
    # openai
    ("which models can i use", ("openai.list-models",), "vague"),
    ("translate audio to english", ("openai.create-translation",), "short"),
    ("edit an image with ai", ("openai.create-image-edit",), "vague"),
    ("upload a file to openai", ("openai.create-file",), "named"),
    ("create an assistent", ("openai.create-assistant",), "typo"),
    ("run many requests at once cheaply", ("openai.create-batch",), "vague"),
]
