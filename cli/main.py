"""The ``reasonlab`` command group: the server commands (``cli.server``), the REST client commands
(``cli.client``) and the local run (``cli.local``).

Server-side commands (``up``, ``api``, ``worker``, ``migrate``, ``user``, ``token``) read the settings
(REASONLAB_*); client commands (``submit``, ``runs``) talk to the API with a URL and token from flags, the
environment (REASONLAB_API_URL, REASONLAB_TOKEN), the config file (~/.config/reasonlab/config.yaml:
``api_url``, ``token``) or, on the machine running ``reasonlab up``, the home folder's admin.token.
``run`` needs no server; ``sync`` (``cli.sync``) uploads runs a script logged offline. Each command imports the backend or worker modules it needs lazily, so
``reasonlab --help`` stays fast and a worker host needs no API dependencies.
"""

from __future__ import annotations

import click

from cli import client, local, server, sync


@click.group()
@click.version_option("0.1.0", prog_name="reasonlab")
def main() -> None:
    """ReasonLab: experiments on compositional reasoning, from spec to reviewed results."""


for command in (*server.COMMANDS, *client.COMMANDS, *local.COMMANDS, *sync.COMMANDS):
    main.add_command(command)


if __name__ == "__main__":
    main()
