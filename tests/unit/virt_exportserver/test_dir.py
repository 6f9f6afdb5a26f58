"""A directory volume's ``dir/`` URI as Go's http.FileServer answers it, and nothing outside the volume:
symlinks that point out of it resolve inside it, special files are refused."""

from __future__ import annotations

import pytest

from kubevirt_testing.export_server import Exporter

pytestmark = pytest.mark.timeout(60)

DIR = "/volumes/files/dir/"


def test_the_listing_is_go_s(exporter: Exporter) -> None:
    reply = exporter.request(DIR)
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "text/html; charset=utf-8"
    assert "Last-Modified" in reply.headers
    assert reply.body == (
        b'<!doctype html>\n<meta name="viewport" content="width=device-width">\n<pre>\n'
        b'<a href="a.txt">a.txt</a>\n'
        b'<a href="b%20&%20%3Cc%3E.txt">b &amp; &lt;c&gt;.txt</a>\n'
        b'<a href="escape-absolute">escape-absolute</a>\n'
        b'<a href="escape-relative">escape-relative</a>\n'
        b'<a href="inside">inside</a>\n'
        b'<a href="lost+found/">lost+found/</a>\n'
        b'<a href="pipe">pipe</a>\n'
        b'<a href="sub/">sub/</a>\n'
        b"</pre>\n"
    )


def test_files_are_served_with_their_type_and_time(exporter: Exporter) -> None:
    reply = exporter.request(DIR + "sub/nested.json")
    assert (reply.status, reply.body) == (200, b'{"n": 1}')
    assert reply.headers["Content-Type"] == "application/json"
    again = exporter.request(
        DIR + "sub/nested.json", headers={"If-Modified-Since": reply.headers["Last-Modified"]}
    )
    assert again.status == 304


def test_a_file_name_with_escapes_is_found(exporter: Exporter) -> None:
    assert exporter.request(DIR + "b%20&%20%3Cc%3E.txt").body == b"needs escaping\n"


def test_a_symlink_inside_the_volume_is_followed(exporter: Exporter) -> None:
    assert exporter.request(DIR + "inside").body == b"alpha\n"


@pytest.mark.parametrize("name", ["escape-absolute", "escape-relative"])
def test_a_symlink_out_of_the_volume_never_leaves_it(exporter: Exporter, name: str) -> None:
    reply = exporter.request(DIR + name)
    assert (reply.status, reply.body) == (404, b"404 page not found\n")


def test_a_symlink_out_of_the_volume_reaches_the_volume_s_own_file_of_that_name(exporter: Exporter) -> None:
    planted = exporter.root / "export-volumes" / "files" / "etc"
    planted.mkdir()
    (planted / "passwd").write_text("the volume's own\n")
    assert exporter.request(DIR + "escape-absolute").body == b"the volume's own\n"
    assert exporter.request(DIR + "escape-relative").body == b"the volume's own\n"


def test_a_symlinked_directory_out_of_the_volume_never_leaves_it(exporter: Exporter) -> None:
    (exporter.root / "export-volumes" / "files" / "up").symlink_to("../..")
    reply = exporter.request(DIR + "up/outside.txt")
    assert reply.status == 404
    listing = exporter.request(DIR + "up/")
    assert b"outside.txt" not in listing.body  # "up" is the volume's own top
    assert b"a.txt" in listing.body


def test_special_files_are_refused(exporter: Exporter) -> None:
    reply = exporter.request(DIR + "pipe")
    assert (reply.status, reply.body) == (403, b"403 Forbidden\n")


def test_go_s_redirects(exporter: Exporter) -> None:
    assert exporter.request(DIR + "sub").headers["Location"] == "sub/"
    assert exporter.request(DIR + "a.txt/").headers["Location"] == "../a.txt"
    assert exporter.request(DIR + "sub/deeper/index.html").headers["Location"] == "./"


def test_a_directory_with_an_index_serves_it(exporter: Exporter) -> None:
    reply = exporter.request(DIR + "sub/deeper/")
    assert (reply.status, reply.body) == (200, b"<html>index</html>")
    assert reply.headers["Content-Type"] == "text/html; charset=utf-8"


def test_ranges_apply_to_files_too(exporter: Exporter) -> None:
    reply = exporter.request(DIR + "a.txt", headers={"Range": "bytes=1-3"})
    assert (reply.status, reply.body) == (206, b"lph")


def test_a_nul_byte_never_reaches_the_file_system(exporter: Exporter) -> None:
    assert exporter.request(DIR + "a.txt%00.png").status == 500
