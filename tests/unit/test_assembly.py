"""`rpc.assembly.combine`: several services in one process serve every router and servicer, and each
one's work before the stop runs, in order."""

import asyncio

from flamewatch.rpc.assembly import Assembly, combine


def test_combine_keeps_every_part_in_order():
    calls = []

    def part(name: str, stops: bool) -> Assembly:
        async def before_stop() -> None:
            calls.append(f"stop {name}")

        return Assembly([f"router {name}"], lambda server: calls.append(f"register {name} on {server}"),
                        before_stop if stops else None, lambda: calls.append(f"reload {name}"), {name: object()})

    both = combine(part("ingester", False), Assembly(["ui"]), part("collector", True))
    assert list(both.routers) == ["router ingester", "ui", "router collector"]
    both.register_grpc("grpc")
    asyncio.run(both.before_stop())
    both.reload()
    assert calls == ["register ingester on grpc", "register collector on grpc", "stop collector",
                     "reload ingester", "reload collector"]
    assert set(both.parts) == {"ingester", "collector"}
    assert combine(Assembly(["ui"])).register_grpc is None
