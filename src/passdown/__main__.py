from passdown.cli import run

run()
