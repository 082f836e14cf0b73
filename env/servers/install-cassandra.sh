#!/usr/bin/env bash
# Fetch Apache Cassandra 5.0.x as jars from Maven Central into
# $STOREBENCH_CACHE/cassandra-<version>/lib (~100 jars, ~67 MB), with Maven's local repository
# under $STOREBENCH_CACHE/m2. The conf files are not in the jars: storebench writes
# cassandra.yaml/logback.xml/JVM flags itself from env/conf/. Runs with Java 17 (`java`).
# Second run: a no-op.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

CASSANDRA_VERSION="${CASSANDRA_VERSION:-5.0.9}"
HOME_DIR="$STOREBENCH_CACHE/cassandra-$CASSANDRA_VERSION"
STAMP="$HOME_DIR/lib/.storebench-complete"
MAIN_JAR="$HOME_DIR/lib/cassandra-all-$CASSANDRA_VERSION.jar"

java_major() {
    java -version 2>&1 | sed -n 's/.*version "\([0-9]*\)[."].*/\1/p' | head -n 1
}

if [ -f "$STAMP" ] && [ -f "$MAIN_JAR" ] && [ "$(cat "$STAMP")" = "$CASSANDRA_VERSION" ]; then
    log "cassandra $CASSANDRA_VERSION already installed: $HOME_DIR/lib ($(ls "$HOME_DIR/lib" | wc -l) jars)"
else
    command -v mvn >/dev/null 2>&1 || apt_install maven
    command -v java >/dev/null 2>&1 || apt_install openjdk-17-jre-headless
    mkdir -p "$HOME_DIR"
    cat >"$HOME_DIR/pom.xml" <<POM
<?xml version="1.0" encoding="UTF-8"?>
<!-- written by storebench env/servers/install-cassandra.sh: only used to fetch the jars -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>storebench</groupId>
  <artifactId>cassandra-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId>
      <artifactId>cassandra-all</artifactId>
      <version>$CASSANDRA_VERSION</version>
    </dependency>
  </dependencies>
</project>
POM
    rm -rf "$HOME_DIR/lib.tmp"
    log "fetching cassandra-all $CASSANDRA_VERSION and its runtime dependencies from Maven Central"
    timed mvn -B -q -f "$HOME_DIR/pom.xml" -Dmaven.repo.local="$STOREBENCH_CACHE/m2" \
        org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
        -DoutputDirectory="$HOME_DIR/lib.tmp" -DincludeScope=runtime
    [ -f "$HOME_DIR/lib.tmp/cassandra-all-$CASSANDRA_VERSION.jar" ] \
        || die "maven finished but cassandra-all-$CASSANDRA_VERSION.jar is missing in $HOME_DIR/lib.tmp"
    rm -rf "${HOME_DIR:?}/lib"
    mv "$HOME_DIR/lib.tmp" "$HOME_DIR/lib"
    printf '%s\n' "$CASSANDRA_VERSION" >"$STAMP"
    log "cassandra $CASSANDRA_VERSION installed: $HOME_DIR/lib ($(ls "$HOME_DIR/lib" | wc -l) jars, $(du -sh "$HOME_DIR/lib" | cut -f1))"
fi

jm=$(java_major || true)
if [ -z "$jm" ] || [ "$jm" -lt 11 ] || [ "$jm" -gt 17 ]; then
    log "warning: java ${jm:-missing} at $(command -v java || echo '(none)'): Cassandra 5.0 runs on Java 11 or 17 (storebench's flags are for 17; apt-get install openjdk-17-jre-headless)"
fi
