"""Dashboard views: thin glue from HTTP to one read or one service call.

Every view fetches through a query that starts from the user (another user's session is a 404),
validates with a form, calls one service and, for an htmx request, renders just the partial that
changed; without JavaScript the same URLs render whole pages or redirect.

One module per page group: `sessions` (the list, import, one session and its actions), `jobs`,
`account` (password, tokens, learned limits, audit trail, login links) and `notes`; `common` holds
what they share. The forms are in memory/forms.py.
"""
