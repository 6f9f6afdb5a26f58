"""The semantic domain comparison used to judge converter output."""

from __future__ import annotations

from kubevirt_testing.domain_equivalence import domain_differences


def test_attribute_and_cross_tag_order_do_not_matter() -> None:
    a = '<domain a="1" b="2"><name>x</name><memory>1</memory></domain>'
    b = '<domain b="2" a="1"><memory> 1 </memory><name>x</name></domain>'
    assert domain_differences(a, b) == []


def test_order_among_same_tag_matters() -> None:
    a = '<domain><disk name="a"/><disk name="b"/></domain>'
    b = '<domain><disk name="b"/><disk name="a"/></domain>'
    assert domain_differences(a, b) != []


def test_missing_and_extra_elements_are_reported() -> None:
    assert domain_differences("<domain><name>x</name></domain>", "<domain/>") == [
        "/domain/name: 1 expected, 0 found"
    ]
    assert domain_differences("<domain/>", "<domain><uuid>1</uuid></domain>") != []


def test_text_and_attribute_values_are_compared() -> None:
    assert domain_differences("<d><n>x</n></d>", "<d><n>y</n></d>") == ["/d/n: text 'x' != 'y'"]
    assert domain_differences('<d u="b"/>', '<d u="kb"/>') != []


def test_empty_elements_libvirt_ignores_may_be_left_out() -> None:
    exp = (
        "<domain><sysinfo><system/><bios></bios></sysinfo>"
        "<devices><interface><source/></interface></devices></domain>"
    )
    act = "<domain><sysinfo><system/></sysinfo><devices><interface/></devices></domain>"
    assert domain_differences(exp, act) == []
    # ...but only when empty
    exp_full = '<domain><sysinfo><bios><entry name="v">1</entry></bios></sysinfo></domain>'
    assert domain_differences(exp_full, "<domain><sysinfo/></domain>") != []


def test_block_source_name_may_be_left_out_but_not_changed() -> None:
    exp = '<domain><disk><source dev="/dev/a" name="a"/></disk></domain>'
    assert domain_differences(exp, '<domain><disk><source dev="/dev/a"/></disk></domain>') == []
    assert domain_differences(exp, '<domain><disk><source dev="/dev/a" name="b"/></disk></domain>') != []
    file_src = '<domain><disk><source file="/f" name="a"/></disk></domain>'
    assert domain_differences(file_src, '<domain><disk><source file="/f"/></disk></domain>') != []
