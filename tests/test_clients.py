"""Each client library runs in its fastest configuration, and the rows say which one."""
import pytest

from storebench.stores import get_store_class

from conftest import open_test_store, value_for

# Tier markers are per test: `server` on each test that needs it, none on the pure ones.

EXPECTED = {  # what client_config() must report for the configuration env/requirements.lock installs
    "redis": ["redis-py", "hiredis", "C reply parser"],
    "cassandra": ["LibevConnection reactor", "Cython-compiled core", "Cython row parser", "cmurmur3 (C)"],
    "mongodb-api": ["pymongo", "pymongo yes", "bson yes"],
    "minio": ["minio-py", "16 threads in flight"],
    "rgw-obstore": ["obstore", "sync API"],
}


@pytest.mark.server
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_client_config_names_the_fast_configuration(name, tmp_path, servers):
    with open_test_store(name, tmp_path, servers) as store:
        config = store.client_config()
        for part in EXPECTED[name]:
            assert part in config, (name, config)


@pytest.mark.server
@pytest.mark.parametrize("parser, says", [("python", "pure-Python reply parser"), ("hiredis", "hiredis")])
def test_redis_parser_is_chosen_per_store(parser, says, servers):
    cls = get_store_class("redis")
    svc = servers.get("redis", "memory")
    with cls(svc.endpoint(), namespace=f"parser-{parser}", service=svc, parser=parser) as store:
        assert says in store.client_config()
        store.put_many((k, value_for(k)) for k in range(20))
        assert store.get_many(list(range(20))) == [value_for(k) for k in range(20)]
        store.clear()


@pytest.mark.server
def test_unknown_redis_parser_is_refused(servers):
    svc = servers.get("redis", "memory")
    with pytest.raises(ValueError, match="parser must be"):
        get_store_class("redis")(svc.endpoint(), service=svc, parser="fast")
