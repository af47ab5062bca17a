"""End-to-end harness: real agent CLIs against scripted model servers on 127.0.0.1."""
