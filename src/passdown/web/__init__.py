"""The web view of a project's handoffs (`passdown ui`, and the pages of `passdown serve`)."""

from passdown.web._app import local_app, with_pages

__all__ = ["local_app", "with_pages"]
