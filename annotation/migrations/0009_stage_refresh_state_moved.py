# The four refresh-state columns of Stage (added by 0003) moved to a model of the app that uses
# them; its migration copies the values first, hence the dependency.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0008_annotation_versions'),
        ('agreement', '0002_agreement_refresh_state'),
    ]

    operations = [
        migrations.RemoveField(
            model_name='stage',
            name='agreement_changes',
        ),
        migrations.RemoveField(
            model_name='stage',
            name='agreement_computed_at',
        ),
        migrations.RemoveField(
            model_name='stage',
            name='agreement_computed_changes',
        ),
        migrations.RemoveField(
            model_name='stage',
            name='agreement_refresh_queued_at',
        ),
    ]
