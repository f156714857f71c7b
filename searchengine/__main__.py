from searchengine.cli import app

app(prog_name="searchengine")
