# Pulsar standalone with its functions worker, and pulsar-external-schema installed where the Python
# function runtime imports from (the image's system python3). Built by the `functions` profile of
# docker/docker-compose.yml, from the repository root:
#
#   docker compose -f docker/docker-compose.yml --profile functions up -d --build
#
ARG PULSAR_IMAGE=apachepulsar/pulsar:4.2.4
FROM ${PULSAR_IMAGE}
USER root
# confluent-kafka builds against librdkafka where no musllinux wheel matches the image's Python.
RUN apk add --no-cache librdkafka \
    && apk add --no-cache --virtual .build gcc musl-dev python3-dev librdkafka-dev
COPY pyproject.toml README.md /tmp/pulsar-external-schema/
COPY src /tmp/pulsar-external-schema/src
RUN pip3 install --break-system-packages --no-cache-dir --prefer-binary /tmp/pulsar-external-schema \
    && rm -rf /tmp/pulsar-external-schema \
    && apk del .build
# The example functions, for `pulsar-admin functions create --py /pulsar/functions/...`.
COPY examples/functions /pulsar/functions
USER 10000
