"""The functions' side of the services: payload models, parsing, answers.

A handler in ``functions/`` is decorators around: parse the event with a parser from
here, make one call to here, return the answer. What lives here is translation only
(event shapes into service calls, results and expected errors into JSON answers); the
rules stay in ``services/`` and ``core/``.

Answers are plain JSON objects: ``{"ok": true, ...}`` on success and
``{"ok": false, "error": "<kind>", "message": "..."}`` for an expected refusal
(``validation``, ``not_found``, ``invalid_request``). Unexpected failures raise, so Lambda
retries an asynchronous invoke and reports a synchronous one as a function error.
"""
