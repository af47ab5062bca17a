"""Browser tests of the web view (`passdown ui`, the pages of `passdown serve`)."""
